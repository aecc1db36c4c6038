package plan

import (
	"net/netip"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// binder answers, for a backend with TrackNodes, which slot of the
// model.NodesBackend a server's node has: the slot holding the node's
// address. Its zero value binds nothing (a backend without TrackNodes).
type binder struct {
	m map[netip.Addr]string // node address -> NodesBackend slot name
}

// newBinder indexes the slots of the NodesBackend.
func newBinder(nodeSlots []model.Slot) binder {
	b := binder{m: make(map[netip.Addr]string, len(nodeSlots))}
	for _, sl := range nodeSlots {
		if sl.Used {
			b.m[sl.Server.Addr] = sl.Name
		}
	}
	return b
}

// For is b for a backend with TrackNodes, the zero binder otherwise.
func (b binder) For(be model.Backend) binder {
	if !be.TrackNodes || b.m == nil {
		return binder{}
	}
	return b
}

// slotOf is the NodesBackend slot of s's node, "" when it has none.
func (b binder) slotOf(s model.Server) string {
	if b.m == nil {
		return ""
	}
	return b.m[s.Addr]
}

// fits reports whether slot sl may hold s: it follows no node, or s's.
func (b binder) fits(sl model.Slot, s model.Server) bool {
	return sl.Track == "" || (b.m != nil && sl.Track == b.slotOf(s))
}

// freeSlot is the first free slot bound to s's node, else the first free
// unbound slot, else -1.
func (b binder) freeSlot(slots []model.Slot, s model.Server) int {
	unbound := -1
	want := b.slotOf(s)
	for i, sl := range slots {
		switch {
		case sl.Used:
		case want != "" && sl.Track == want:
			return i
		case sl.Track == "" && unbound < 0:
			unbound = i
		}
	}
	return unbound
}
