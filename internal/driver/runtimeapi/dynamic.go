package runtimeapi

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// Backends created at runtime, one capability of the HAProxy the driver
// talks to (3.4+, learned from its version: learnVersion). The config is
// rendered with render.Options.DynamicBackends: every backend a class's
// named defaults can describe is written `backend NAME from _dyn_...`,
// and is no structure (render/dynamic.go). So a new such backend changes
// no hash: the pass creates it (`add backend NAME from DEFAULTS`, each
// slot with `add server` in maintenance, `publish backend`) before the
// slots come into service and before any map names it, and the usual
// slot operations then put its servers in; one that goes is unpublished
// and its slots put in maintenance after the maps stop naming it, then
// deleted (`del server`, `del backend`) once HAProxy lets it (no
// connection left), tried again every pass meanwhile. The config file
// written after the pass (persist.go) has them as ordinary backends, so a
// restart or the next reload loads what runs, with the same hash.
//
// What stays static (render.dynamicOK): ClientIP affinity (3.4 refuses a
// stick table in a defaults section), servers tracking their node, and
// per-frontend source rules behind the fixed listener; those reload (or
// take a spare with --backend-pool) as on any version.

// freeSlot is where a slot created at runtime points until the plan puts
// a server in it (render.FreeSlotAddr).
var freeSlot = netip.MustParseAddrPort(render.FreeSlotAddr)

// maxDeletesPerPass bounds the backends whose deletion a pass tries.
const maxDeletesPerPass = 64

// dynamicFailed stands for the structure hash after a failed creation of
// backends at runtime: what HAProxy holds of them is not known, so the
// next pass reloads (the file names them as ordinary backends).
const dynamicFailed = "(backends created at runtime in doubt)"

// learnVersion sets the capabilities of the running HAProxy's version
// (show info's, or the master's after a reload). Under d.mu.
func (d *HAProxy) learnVersion(v haproxy.Version) {
	if !v.Known() {
		return
	}
	d.delGuarded = v.GuardsServerDeletion()
	if on := v.DynamicBackends() && !d.opts.staticBackends; on != d.opts.Render.DynamicBackends {
		d.opts.Render.DynamicBackends = on
		d.log.Info("haproxy creates backends at runtime", "version", v.Text, "enabled", on)
	}
}

// createdAtRuntime names the backends of cfg (a model) that HAProxy
// creates at runtime, which the pool of spares leaves out
// (spares.ViewExcept); nil when there are none. Under d.mu.
func (d *HAProxy) createdAtRuntime(cfg model.Config) func(*model.Backend) bool {
	from := render.DynamicBackends(cfg, d.opts.Render)
	if len(from) == 0 {
		return nil
	}
	return func(b *model.Backend) bool {
		_, ok := from[b.Name]
		return ok
	}
}

// classChanged lists, as reload reasons, the backends of cfg whose
// settings differ from those of the model last applied while the
// structure hash is the same: only backends created from a class's
// defaults can (any other's settings are in the hash), and HAProxy
// cannot move a backend to another defaults section: a reload writes it
// from its new class. Under d.mu.
func (d *HAProxy) classChanged(cfg model.Config) []string {
	if !d.opts.Render.DynamicBackends || len(d.running.Backends) == 0 {
		return nil
	}
	var out []string
	for _, b := range cfg.Backends {
		if b.Name == "" || b.Name[0] == '_' {
			continue // the controller's own and the spares: static
		}
		i, ok := slices.BinarySearchFunc(d.running.Backends, b.Name, func(r *model.Backend, name string) int {
			return strings.Compare(r.Name, name)
		})
		if !ok {
			continue
		}
		if r := d.running.Backends[i]; r != b && !sameClass(r, b) {
			out = append(out, "backend "+b.Name+" changed class (created at runtime from another defaults)")
		}
	}
	return out
}

// sameClass reports whether a and b have the same settings but for their
// Service (render writes no Service into a backend's section).
func sameClass(a, b *model.Backend) bool {
	c := *b
	c.Service = a.Service
	return a.SameStructure(&c)
}

// addBackends creates the backends of cfg written from a class's defaults
// that HAProxy lacks (publishes again one unpublished and not yet
// deleted), with layout's slots, all in maintenance: the plan's operations
// bring them into service. Under d.mu.
func (d *HAProxy) addBackends(ctx context.Context, cfg model.Config, layout model.Layout, res *driver.Result) error {
	from := render.DynamicBackends(cfg, d.opts.Render)
	if len(from) == 0 {
		return nil
	}
	var cmds, added []string
	for _, be := range cfg.Backends {
		def, ok := from[be.Name]
		if !ok {
			continue
		}
		if _, ok := d.actual[be.Name]; ok {
			// Publishing is idempotent: after a read back, whether
			// HAProxy has it published is not known.
			if d.unpublished[be.Name] || d.pubUnknown {
				cmds = append(cmds, "publish backend "+be.Name)
			}
			continue
		}
		slots := layout[be.Name]
		nb := haproxy.NewBackend{Name: be.Name, Defaults: def}
		opts := render.ServerOptions(be)
		// `show servers state` lists servers added at runtime newest
		// first: added from the last slot to the first, they read in
		// slot order, as plan.RuntimeBuilder wants them.
		for i := len(slots) - 1; i >= 0; i-- {
			nb.Servers = append(nb.Servers, haproxy.NewServer{Name: model.SlotName(i), Addr: freeSlot, Options: opts, Disabled: true})
		}
		cmds = append(cmds, nb.Commands()...)
		added = append(added, be.Name)
	}
	if len(cmds) == 0 {
		d.pubUnknown = false
		return nil
	}
	ans, err := d.rt.ExecChecked(ctx, cmds)
	res.Ops += len(ans)
	if err != nil {
		res.OpsFailed += len(cmds) - len(ans)
		d.hash = dynamicFailed // a reload owed (owed.go)
		return fmt.Errorf("creating backends at runtime: %w", err)
	}
	for _, name := range added {
		states := make([]plan.Actual, len(layout[name]))
		for i := range states {
			states[i] = plan.Actual{Server: model.Server{Addr: freeSlot.Addr(), Port: freeSlot.Port()}, Maint: true}
		}
		d.actual[name] = states
	}
	for name := range d.unpublished {
		if _, ok := from[name]; ok {
			delete(d.unpublished, name)
		}
	}
	d.pubUnknown = false
	if len(added) > 0 {
		d.log.Info("backends created at runtime", "backends", len(added), "first", added[0])
	}
	return nil
}

// dropBackends unpublishes the backends HAProxy runs that layout has not
// (with the structure hash unchanged, only backends created from a
// class's defaults can be so) and puts their slots in maintenance, then
// tries to delete them; a deletion HAProxy refuses (connections still
// open) is tried again in a later pass. Under d.mu.
func (d *HAProxy) dropBackends(ctx context.Context, layout model.Layout, res *driver.Result) error {
	if !d.opts.Render.DynamicBackends && len(d.unpublished) == 0 {
		// No backend is created at runtime, none waits for its deletion:
		// the backends HAProxy runs are the structure's, the same as
		// layout's. Not a walk of every backend a pass (issue 29: ~1 ms
		// of a new Service's pass at 10,000 on HAProxy 2.6).
		return nil
	}
	var gone []string
	for name := range d.actual {
		if _, ok := layout[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	slices.Sort(gone)
	var cmds []string
	for _, name := range gone {
		if d.unpublished[name] {
			continue
		}
		cmds = append(cmds, "unpublish backend "+name)
		for i, a := range d.actual[name] {
			if !a.Maint {
				cmds = append(cmds, fmt.Sprintf("set server %s/%s state maint", name, model.SlotName(i)))
			}
		}
	}
	if len(cmds) > 0 {
		ans, err := d.rt.ExecChecked(ctx, cmds)
		res.Ops += len(ans)
		if err != nil {
			d.known = false
			res.OpsFailed += len(cmds) - len(ans)
			return fmt.Errorf("unpublishing backends created at runtime: %w", err)
		}
		if d.unpublished == nil {
			d.unpublished = map[string]bool{}
		}
		for _, name := range gone {
			d.unpublished[name] = true
			for i := range d.actual[name] {
				d.actual[name][i].Maint = true
			}
		}
	}
	named, err := d.namedByStreams(ctx, res) // streamrefs.go
	if err != nil {
		return nil // tried again by a later pass
	}
	for _, name := range gone[:min(len(gone), maxDeletesPerPass)] {
		d.deleteBackend(ctx, name, named, res)
	}
	return nil
}

// deleteBackend deletes an unpublished backend whose slots are all in
// maintenance, its slots from the last to the first, one command at a
// time: HAProxy refuses to delete a server with connections still open,
// and the slots left are then s1..sK, as the runtime state reads them.
// What it could not delete is tried again by a later pass, as is a
// backend one of whose slots a stream still names (named: streamrefs.go).
func (d *HAProxy) deleteBackend(ctx context.Context, name string, named map[string]bool, res *driver.Result) {
	for i := range d.actual[name] {
		if named[name+"/"+model.SlotName(i)] {
			d.log.Debug("backend created at runtime not deleted yet: a stream names its server", "backend", name, "server", model.SlotName(i))
			return
		}
	}
	if _, err := d.rt.ExecChecked(ctx, []string{"experimental-mode on"}); err != nil {
		return
	}
	for i := len(d.actual[name]) - 1; i >= 0; i-- {
		if _, err := d.rt.ExecChecked(ctx, []string{fmt.Sprintf("del server %s/%s", name, model.SlotName(i))}); err != nil {
			d.log.Debug("backend created at runtime not deleted yet", "backend", name, "err", err)
			return
		}
		res.Ops++
		d.actual[name] = d.actual[name][:i]
	}
	if _, err := d.rt.ExecChecked(ctx, []string{"del backend " + name}); err != nil {
		d.log.Debug("backend created at runtime not deleted yet", "backend", name, "err", err)
		return
	}
	res.Ops++
	delete(d.actual, name)
	delete(d.unpublished, name)
}
