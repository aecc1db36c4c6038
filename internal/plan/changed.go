package plan

import (
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Loose indexes the backends with TrackNodes that hold a server in a slot
// following no node (a "loose" slot: a server placed there without a
// reload carries its node's state itself). Besides the NodesBackend, they
// are the only backends a node's change of state touches, so a pass after
// a node change looks at them instead of at every backend. It maps each
// name to the backend's index in the Backends of the config it was built
// for.
type Loose map[string]int

// LooseOf is the Loose index of cfg's backends in layout.
func LooseOf(cfg model.Config, layout model.Layout) Loose {
	out := Loose{}
	for i, be := range cfg.Backends {
		if be.TrackNodes && hasLooseSlot(layout[be.Name]) {
			out[be.Name] = i
		}
	}
	return out
}

// Update brings l up to date once the backends in changed took those
// slots, as AssignChanged returned them for cfg.
func (l Loose) Update(cfg model.Config, changed model.Layout) {
	set := func(i int) {
		be := cfg.Backends[i]
		slots, ok := changed[be.Name]
		switch {
		case !ok:
		case be.TrackNodes && hasLooseSlot(slots):
			l[be.Name] = i
		default:
			delete(l, be.Name)
		}
	}
	if cfg.Changes != nil {
		for _, i := range cfg.Changes.Backends {
			if i >= 0 && i < len(cfg.Backends) {
				set(i)
			}
		}
	}
	for _, i := range l {
		if i < len(cfg.Backends) {
			set(i)
		}
	}
}

func hasLooseSlot(slots []model.Slot) bool {
	for _, sl := range slots {
		if sl.Used && sl.Track == 0 {
			return true
		}
	}
	return false
}

// AssignChanged is AssignFrom(desired, prevDesired, prev, false) for a
// desired Config derived from prevDesired (desired.Changes.Base is
// prevDesired.Backends): only the listed backends are assigned again; it
// returns their new slots alone (every other backend keeps its slots in
// prev). ok is false when desired carries no usable Changes or a listed
// backend no longer fits its slots; the caller then takes the general path.
// loose is the Loose index of prevDesired in prev (LooseOf, kept up to date
// with Loose.Update).
func AssignChanged(desired, prevDesired model.Config, prev model.Layout, loose Loose) (changed model.Layout, ok bool) {
	ch := desired.Changes
	if ch == nil || !model.SameSlice(ch.Base, prevDesired.Backends) || len(desired.Backends) != len(prevDesired.Backends) {
		return nil, false
	}
	changed = make(model.Layout, len(ch.Backends))
	nodes := newBinder(prev[model.NodesBackend])
	for _, i := range ch.Backends {
		if i < 0 || i >= len(desired.Backends) {
			return nil, false
		}
	}
	for i := range nodesFirst(desired.Backends, ch.Backends) {
		be := desired.Backends[i]
		old, found := prev[be.Name]
		if !found || prevDesired.Backends[i].Name != be.Name {
			return nil, false
		}
		slots, fits := assignBackend(be.Servers, old, len(old), false, nodes.For(be))
		if !fits {
			return nil, false
		}
		changed[be.Name] = slots
		if be.Name == model.NodesBackend {
			nodes = newBinder(slots)
		}
	}
	// A node's state changes no backend that follows it, but for the
	// servers of that node in slots that follow no node: those backends
	// are assigned again too.
	if slots, ok := changed[model.NodesBackend]; ok {
		if flipped := flippedNodes(prev[model.NodesBackend], slots); flipped != nil {
			for name, i := range loose {
				if i >= len(desired.Backends) || desired.Backends[i].Name != name {
					return nil, false
				}
				be := desired.Backends[i]
				if _, done := changed[be.Name]; done || !be.TrackNodes {
					continue
				}
				if old := prev[be.Name]; hasLoose(old, flipped) {
					again, fits := assignBackend(be.Servers, old, len(old), false, nodes.For(be))
					if !fits {
						return nil, false
					}
					changed[be.Name] = again
				}
			}
		}
	}
	return changed, true
}
