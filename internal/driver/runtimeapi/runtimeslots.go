package runtimeapi

import (
	"context"
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// A spare's free slots created at runtime (render.Options.RuntimeSlots,
// render/runtimeslots.go; issue 29, the pool's start): the config file
// holds a spare's slots up to the last one in use, so the start and every
// reload parse ~half the server lines at 10,000 Services. The driver
// knows the others as absent (plan.Actual.Absent): after a reload (the
// new worker has what the file holds) and after a read back (a restarted
// controller or HAProxy: the file's comment names them), and the plan
// creates one (`add server ... disabled`, with the backend's server
// keywords) in the pass that first puts a server into it, before its
// other operations, and before any map names the spare (upThenDown sends
// it with the slots coming into service). The free spares' slots (a few
// hundred) are created right after a reload (createFreeSpares), so a new
// Service finds them there. The structure hash covers every slot either
// way: no reload.

// padAbsent marks absent the slots of layout that the file just loaded
// left out (render.FileSlots) of the backends of cfg that may have them.
// Under d.mu, after a reload's read of the slots.
func (d *HAProxy) padAbsent(cfg model.Config, layout model.Layout) {
	if !d.opts.Render.RuntimeSlots {
		return
	}
	n := 0
	for _, be := range cfg.Backends {
		if render.RuntimeSlotsOK(be, d.opts.Render) {
			n += d.actual.WithAbsent(be.Name, len(layout[be.Name]))
		}
	}
	if n > 0 {
		d.log.Debug("free slots not in the config file, created at runtime when needed", "slots", n)
	}
}

// restoreAbsent is padAbsent after a read back, from the config file's
// comments (render.ScanRuntimeSlots) when the file is the one running
// (hash): the layout read from HAProxy gets the free slots the file names
// and HAProxy lacks, so the next pass finds the same structure hash and
// does not reload. Under d.mu.
func (d *HAProxy) restoreAbsent(path, hash string) {
	f := openRendered(path, hash) // tracks.go
	if f == nil {
		return
	}
	defer f.Close()
	fileHash, slots, err := render.ScanRuntimeSlots(f)
	if err != nil || fileHash != hash {
		return
	}
	d.ownLayout()
	for be, n := range slots {
		// A spare with every slot absent lists no server: no entry yet.
		cur := d.layout[be]
		if len(cur) >= n {
			continue
		}
		for i := len(cur); i < n; i++ {
			cur = append(cur, model.Slot{})
		}
		d.layout[be] = cur
		d.actual.WithAbsent(be, n)
	}
}

// createArgs fills d.slotArgs with the `add server` keywords of every
// backend of cfg that ops create a slot in. Under d.mu.
func (d *HAProxy) createArgs(ops []plan.Op, cfg model.Config) {
	var want map[string]bool
	for _, o := range ops {
		if o.Kind == plan.Create {
			if want == nil {
				want = map[string]bool{}
			}
			want[o.Backend] = true
		}
	}
	if want == nil {
		return
	}
	if d.slotArgs == nil {
		d.slotArgs = map[string]string{}
	}
	for _, be := range cfg.Backends {
		if want[be.Name] {
			d.slotArgs[be.Name] = strings.Join(render.RuntimeSlotOptions(be), " ")
		}
	}
}

// maxEagerSlots bounds the slots createFreeSpares creates after one
// reload (~50 µs each in HAProxy 2.6); the others are created when a
// server needs them.
const maxEagerSlots = 4096

// createFreeSpares creates, after a reload, the absent slots of the
// spares that hold no server (a pool's free spares: 4 slots each, tens to
// a few hundred spares): a new Service takes one of them and finds its
// slots there, with no `add server` in its own pass. The occupied
// spares' free slots (most of them) stay absent until needed. Under
// d.mu.
func (d *HAProxy) createFreeSpares(ctx context.Context, cfg model.Config, layout model.Layout, res *driver.Result) error {
	if !d.opts.Render.RuntimeSlots {
		return nil
	}
	free := model.Server{Addr: plan.FreeAddr.Addr(), Port: plan.FreeAddr.Port()}
	var ops []plan.Op
	for _, be := range cfg.Backends {
		if len(ops) >= maxEagerSlots {
			break
		}
		slots := layout[be.Name]
		if !render.RuntimeSlotsOK(be, d.opts.Render) || slices.ContainsFunc(slots, func(s model.Slot) bool { return s.Used }) {
			continue
		}
		st := d.actual[be.Name]
		for i := plan.Present(st); i < len(st) && i < len(slots) && len(ops) < maxEagerSlots; i++ {
			ops = append(ops, plan.Op{Kind: plan.Create, Backend: be.Name, Slot: model.SlotName(i), Server: free})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	d.createArgs(ops, cfg)
	return d.execOps(ctx, ops, res)
}
