package runtimeapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// Reading back what HAProxy runs: after a reload, at start and when the
// state is unknown (Verify, in verify.go, reads without the driver lock).

// waitHash polls the new worker (one of workers, the master's list after
// the reload, when known) until it reports the expected structure
// and reads its slot states.
func (d *HAProxy) waitHash(ctx context.Context, hash string, workers []int) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.ReloadTimeout)
	defer cancel()
	for i := 0; ; i++ {
		info, err := d.rt.ShowInfo(ctx)
		if err == nil && info["description"] == render.DescriptionPrefix+hash && newWorker(info["Pid"], workers) {
			d.pid = info["Pid"]
			d.pidEpoch++
			return d.readSlots(ctx)
		}
		d.rt.Reset()
		select {
		case <-ctx.Done():
			return fmt.Errorf("new worker did not report config %s: %w", hash, errors.Join(err, haproxy.ErrUnavailable))
		case <-time.After(time.Duration(min(i+1, 20)) * 5 * time.Millisecond):
		}
	}
}

// readBack learns what HAProxy runs: its structure hash and slot states.
func (d *HAProxy) readBack(ctx context.Context) error {
	// A fresh connection: the one held may be to a worker a reload
	// behind the controller's back left stopping (its proxies disabled).
	d.rt.Reset()
	info, err := d.rt.ShowInfo(ctx)
	if err != nil {
		return fmt.Errorf("read running state: %w", err)
	}
	d.hash = strings.TrimPrefix(info["description"], render.DescriptionPrefix)
	d.pid = info["Pid"]
	d.pidEpoch++
	d.running = model.Config{}
	if v, err := haproxy.ParseVersion(info["Version"]); err == nil {
		d.learnVersion(v) // dynamic.go
	}
	d.unpublished, d.pubUnknown = nil, true // not known (dynamic.go)
	foreign, err := d.readSlotStates(ctx, true)
	if err != nil {
		return err
	}
	if len(foreign) > 0 {
		// The config carries a structure hash, yet these backends' servers
		// are not the slots render writes (hand-edited, or another tool's):
		// their slots are missing from the state read, and only a reload
		// gives them back. A hash no config has makes the next pass reload.
		d.log.Warn("backends whose servers this controller did not render; reloading",
			"backends", len(foreign), "first", foreign[0], "hash", d.hash)
		d.hash = foreignHash
	}
	d.known = true
	return nil
}

// onlyReadBack reports whether what HAProxy runs is known only from
// readBack: a hash read from it, and no model applied since.
func (d *HAProxy) onlyReadBack() bool {
	return d.running.Frontends == nil && d.running.Backends == nil && d.hash != ""
}

// foreignHash stands for the structure hash of a running config that is
// not one this controller rendered. It differs from every real hash (and
// reads as the reason of the reload it causes).
const foreignHash = "(not rendered by this controller)"

// readSlots is readSlotStates for the worker of a config just loaded,
// which this controller rendered: a backend it did not render is an error.
func (d *HAProxy) readSlots(ctx context.Context) error {
	foreign, err := d.readSlotStates(ctx, false)
	if err == nil && len(foreign) > 0 {
		err = fmt.Errorf("read server states: backend %s has servers not rendered by this controller: %w", foreign[0], haproxy.ErrCommand)
	}
	return err
}

// readSlotStates reads every slot's state. With withLayout it also
// rebuilds the layout from it (a slot in maintenance is free, any other
// slot holds the server it points at); without, the caller sets the layout
// it just loaded (a reload) and the next operations bring the slots to it.
// It returns the backends left out because their servers are not slots
// s1, s2, ... in order (see plan.RuntimeBuilder).
func (d *HAProxy) readSlotStates(ctx context.Context, withLayout bool) (foreign []string, err error) {
	rt, foreign, twins, err := d.dumpStates(ctx)
	if err != nil {
		return nil, fmt.Errorf("read server states: %w", err)
	}
	// A renewal cut short (a restart): ended by the next pass, or, when
	// slots are missing, by a reload (renewback.go).
	foreign = d.adoptTwins(rt, twins, foreign)
	d.actual = rt
	if withLayout {
		// The layout read back is the runtime state itself, with the
		// slots' bindings to nodes from the config file (the Runtime API
		// does not show them).
		d.layout, d.loose = rt.Layout(), nil
		restoreTracks(d.layout, d.opts.ConfigPath, d.hash, d.log)
		d.restoreAbsent(d.opts.ConfigPath, d.hash) // runtimeslots.go
		d.assigned, d.consistent, d.unsent = false, true, nil
	}
	d.gen++
	// A Verify reading meanwhile holds older news than this.
	d.verify.reads++
	return foreign, nil
}

// dumpStates reads every slot's state over a connection of its own, row
// by row: the dump (megabytes at tens of thousands of servers) is never
// held whole, so reading back costs little beyond the resulting state.
func (d *HAProxy) dumpStates(ctx context.Context) (plan.Runtime, []string, plan.Twins, error) {
	var b plan.RuntimeBuilder
	err := haproxy.ScanServersState(ctx, d.opts.Render.StatsSocket, func(s haproxy.ServerState) error {
		if render.IsPassBackend(s.Backend) {
			return nil // render/passthrough.go: no slots
		}
		b.Add(s.Backend, s.Server, actualOf(s))
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	rt, foreign := b.Finish()
	return rt, foreign, b.Twins(), nil
}
