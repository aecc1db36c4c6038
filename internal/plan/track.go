package plan

import (
	"iter"
	"net/netip"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// binder answers, for a backend with TrackNodes, which slot of the
// model.NodesBackend a server's node has (the slot holding the node's
// address) and whether the node is out of service. Its zero value binds
// nothing (a backend without TrackNodes).
type binder struct {
	m    map[netip.Addr]uint16 // node address -> 1 + index of its NodesBackend slot
	down map[netip.Addr]bool   // node address -> in maintenance
}

// newBinder indexes the slots of the NodesBackend.
func newBinder(nodeSlots []model.Slot) binder {
	b := binder{m: make(map[netip.Addr]uint16, len(nodeSlots)), down: make(map[netip.Addr]bool)}
	for i, sl := range nodeSlots {
		if sl.Used {
			b.m[sl.Server.Addr] = uint16(i + 1)
			if sl.Server.Maint {
				b.down[sl.Server.Addr] = true
			}
		}
	}
	return b
}

// setMaint gives the used slots of a backend with TrackNodes their own
// maintenance: a slot that follows its node has none of its own (it
// inherits the node's), one that follows no node carries its node's.
func (b binder) setMaint(slots []model.Slot) {
	if b.m == nil {
		return
	}
	for i := range slots {
		if sl := &slots[i]; sl.Used {
			sl.Server.Maint = sl.Track == 0 && b.down[sl.Server.Addr]
		}
	}
}

// stale reports whether sl, of a backend with TrackNodes, holds a server
// in a slot that follows no node and carries a state other than its
// node's.
func (b binder) stale(sl model.Slot) bool {
	return b.m != nil && sl.Used && sl.Track == 0 && sl.Server.Maint != b.down[sl.Server.Addr]
}

// flippedNodes lists the node addresses whose state differs between two
// versions of the NodesBackend's slots (came, went, or in and out of
// maintenance).
func flippedNodes(old, new []model.Slot) map[netip.Addr]bool {
	state := func(slots []model.Slot) map[netip.Addr]bool {
		m := make(map[netip.Addr]bool, len(slots))
		for _, sl := range slots {
			if sl.Used {
				m[sl.Server.Addr] = sl.Server.Maint
			}
		}
		return m
	}
	o, n := state(old), state(new)
	var out map[netip.Addr]bool
	for a, down := range n {
		if was, ok := o[a]; !ok || was != down {
			if out == nil {
				out = make(map[netip.Addr]bool)
			}
			out[a] = true
		}
	}
	for a := range o {
		if _, ok := n[a]; !ok {
			if out == nil {
				out = make(map[netip.Addr]bool)
			}
			out[a] = true
		}
	}
	return out
}

// hasLoose reports whether slots hold a server of one of nodes in a slot
// that follows no node: such a slot carries its node's state itself.
func hasLoose(slots []model.Slot, nodes map[netip.Addr]bool) bool {
	for _, sl := range slots {
		if sl.Used && sl.Track == 0 && nodes[sl.Server.Addr] {
			return true
		}
	}
	return false
}

// For is b for a backend with TrackNodes, the zero binder otherwise.
func (b binder) For(be *model.Backend) binder {
	if !be.TrackNodes || b.m == nil {
		return binder{}
	}
	return b
}

// slotOf is the model.Slot.Track of s's node, 0 when it has no slot.
func (b binder) slotOf(s model.Server) uint16 {
	if b.m == nil {
		return 0
	}
	return b.m[s.Addr]
}

// fits reports whether slot sl may hold s: it follows no node, or s's.
func (b binder) fits(sl model.Slot, s model.Server) bool {
	return sl.Track == 0 || (b.m != nil && sl.Track == b.slotOf(s))
}

// freeSlot is the first free slot bound to s's node, else the first free
// unbound slot, else -1.
func (b binder) freeSlot(slots []model.Slot, s model.Server) int {
	unbound := -1
	want := b.slotOf(s)
	for i, sl := range slots {
		switch {
		case sl.Used:
		case want != 0 && sl.Track == want:
			return i
		case sl.Track == 0 && unbound < 0:
			unbound = i
		}
	}
	return unbound
}

// nodesFirst yields the indices of backends (only those in idx, when idx
// is not nil), the NodesBackend's first: the slots of the others are bound
// to its slots, which must be assigned by then. The indices must be valid.
func nodesFirst(backends []*model.Backend, idx []int) iter.Seq[int] {
	return func(yield func(int) bool) {
		n, at := len(backends), func(k int) int { return k }
		if idx != nil {
			n, at = len(idx), func(k int) int { return idx[k] }
		}
		first := -1
		for k := range n {
			if backends[at(k)].Name == model.NodesBackend {
				first = k
				if !yield(at(k)) {
					return
				}
				break
			}
		}
		for k := range n {
			if k != first && !yield(at(k)) {
				return
			}
		}
	}
}
