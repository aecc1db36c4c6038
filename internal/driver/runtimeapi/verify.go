package runtimeapi

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// verifyState is what Verify needs from passes that run while it reads
// HAProxy's state. Fields other than mu and hook are guarded by the
// driver's mu.
type verifyState struct {
	mu sync.Mutex // one Verify at a time; passes never take it
	// touched records the backends that passes operated on (execOps) since
	// Verify started reading; nil while no Verify reads. HAProxy's dump may
	// show such a backend before or after the operations: neither is news.
	touched map[string]bool
	reads   uint64 // counts full reads of the slot states (readSlotStates)
	// hook, set by tests, is called without the driver's lock at points of
	// the read: "dump-started" (first row received), "dump-done".
	hook func(point string)
}

// touch records the backends ops operate on, if a Verify is reading.
func (v *verifyState) touch(ops []plan.Op) {
	if v.touched == nil {
		return
	}
	last := ""
	for _, o := range ops {
		if o.Backend != last { // ops come grouped by backend
			v.touched[o.Backend] = true
			last = o.Backend
		}
	}
}

func (v *verifyState) at(point string) {
	if v.hook != nil {
		v.hook(point)
	}
}

// Verify checks that HAProxy still runs what the driver believes, without
// holding up passes while it reads: a whole dump of the server states takes
// hundreds of milliseconds at tens of thousands of servers, which is why
// this replaces forgetting the state (Invalidate) and reading it back in
// the next pass.
//
// When HAProxy runs another structure or worker than the driver knows, the
// state becomes unknown and the next Apply reads it back. When only slot
// states differ (changed behind the controller's back), the driver adopts
// HAProxy's values and the next Apply plans every backend, which corrects
// them. Backends that passes operated on during the read, and reads
// overlapped by a reload or a full read-back, prove nothing and are left
// alone. drift reports whether anything differed. Verify does nothing while
// the state is unknown: the next Apply reads it back anyway.
func (d *HAProxy) Verify(ctx context.Context) (drift bool, err error) {
	d.verify.mu.Lock()
	defer d.verify.mu.Unlock()

	d.mu.Lock()
	if !d.known || d.aside != nil { // a reload aside: the worker is changing (aside.go)
		d.mu.Unlock()
		return false, nil
	}
	hash, pid, reads, lastReload, epoch := d.hash, d.pid, d.verify.reads, d.gate.last, d.pidEpoch
	d.verify.touched = make(map[string]bool)
	d.mu.Unlock()
	defer func() { // on every return: runs after the deferred unlock below
		d.mu.Lock()
		d.verify.touched = nil
		d.mu.Unlock()
	}()
	ctx, cancel := haproxy.WithDefaultTimeout(ctx, verifyTimeout)
	defer cancel()

	t := time.Now()
	seen, err := d.readRunning(ctx)
	if err != nil {
		return false, fmt.Errorf("verify: %w", err)
	}
	read := time.Since(t)
	d.verify.at("dump-done")

	d.mu.Lock()
	defer d.mu.Unlock()
	touched := d.verify.touched
	seen.foreign = d.renewing(seen.foreign, touched) // twins of a renewal are no foreign servers (renew.go)
	if !d.known || d.verify.reads != reads || !d.gate.last.Equal(lastReload) || d.aside != nil || d.pidEpoch != epoch {
		d.log.Debug("verify: state replaced during the read; result dropped", "read", read)
		return false, nil
	}
	if seen.pid != pid || seen.pidAfter != pid || seen.hash != hash || len(seen.foreign) > 0 {
		d.known = false
		d.log.Warn("HAProxy runs another config or worker than applied; reading it back",
			"pid", seen.pid, "pid_after_dump", seen.pidAfter, "applied_pid", pid, "hash", seen.hash, "applied_hash", hash, "foreign_backends", len(seen.foreign))
		return true, nil
	}
	n, first, mismatch := adoptStates(d.actual, seen.states, touched)
	if mismatch != "" {
		d.known = false
		d.log.Warn("HAProxy's slots differ from the structure applied; reading it back", "backend", mismatch)
		return true, nil
	}
	if n > 0 {
		// actual now holds HAProxy's values, so that planning every
		// backend (not only those whose slots changed) puts them back.
		d.consistent = false
		d.log.Warn("slot states changed behind the controller's back; correcting", "slots", n, "first", first, "skipped_backends", len(touched))
		return true, nil
	}
	d.log.Debug("verify: HAProxy runs what was applied", "read", read, "skipped_backends", len(touched))
	return false, nil
}

// verifyTimeout bounds a Verify whose context has no deadline.
const verifyTimeout = time.Minute

// running is what Verify reads from HAProxy.
type running struct {
	pid, pidAfter string // the worker's, before and after the dump
	hash          string
	states        plan.Runtime
	foreign       []string
}

// readRunning reads the worker's identity and every slot state over
// connections of its own: "show info" before and after the dump, so that
// a worker replaced during the dump is noticed (its pid differs).
func (d *HAProxy) readRunning(ctx context.Context) (running, error) {
	rt := haproxy.NewRuntime(d.opts.Render.StatsSocket)
	defer rt.Close()
	info, err := rt.ShowInfo(ctx)
	if err != nil {
		return running{}, err
	}
	var b plan.RuntimeBuilder
	started := false
	err = haproxy.ScanServersState(ctx, d.opts.Render.StatsSocket, func(s haproxy.ServerState) error {
		if !started {
			started = true
			d.verify.at("dump-started")
		}
		if render.IsPassBackend(s.Backend) {
			return nil // render/passthrough.go: no slots
		}
		b.Add(s.Backend, s.Server, actualOf(s))
		return nil
	})
	if err != nil {
		return running{}, err
	}
	after, err := rt.ShowInfo(ctx)
	if err != nil {
		return running{}, err
	}
	r := running{pid: info["Pid"], pidAfter: after["Pid"], hash: strings.TrimPrefix(info["description"], render.DescriptionPrefix)}
	r.states, r.foreign = b.Finish()
	for be := range b.Twins() {
		r.foreign = append(r.foreign, be) // unless being renewed (renewing)
	}
	return r, nil
}

// adoptStates copies into actual the states of seen that differ, for every
// backend not in skip, and returns how many slots differed and the first
// of them. mismatch names a backend (not in skip) that one side has and the
// other lacks, or whose slot counts differ: then nothing is reliable, and
// actual may be partly updated.
func adoptStates(actual, seen plan.Runtime, skip map[string]bool) (n int, first, mismatch string) {
	for be, states := range seen {
		if skip[be] {
			continue
		}
		cur, ok := actual[be]
		if !ok || plan.Present(cur) != len(states) {
			return n, first, be // absent slots (runtimeslots.go) are none of HAProxy's
		}
		for i, a := range states {
			if cur[i] != a {
				if n == 0 {
					first = be + "/" + model.SlotName(i)
				}
				n++
				cur[i] = a
			}
		}
	}
	for be, cur := range actual {
		if _, ok := seen[be]; !ok && !skip[be] && plan.Present(cur) > 0 {
			return n, first, be
		}
	}
	return n, first, ""
}

// actualOf is the slot state a row of "show servers state" describes: the
// slot's own state. What a slot that follows its node inherits from the
// model.NodesBackend is the node slot's state, planned there.
func actualOf(s haproxy.ServerState) plan.Actual {
	return plan.Actual{Server: model.Server{Addr: s.Addr, Port: s.Port, Drain: s.OwnDrain()}, Maint: s.OwnMaint()}
}
