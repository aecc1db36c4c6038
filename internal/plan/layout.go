// Package plan compares what HAProxy should run with what it runs and
// decides how to get there: which server slot each server takes, whether a
// reload is unavoidable, and which Runtime API operations apply the rest.
// Everything here is pure.
package plan

import (
	"maps"
	"net/netip"
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// MinSlots is the smallest number of slots a backend gets.
const MinSlots = 4

// SlotsFor is the number of slots a backend with n servers is given when it
// is (re)sized: n plus a quarter of headroom (at least two), rounded up to a
// multiple of four.
func SlotsFor(n int) int {
	head := n / 4
	if head < 2 {
		head = 2
	}
	s := (n + head + 3) / 4 * 4
	if s < MinSlots {
		s = MinSlots
	}
	return s
}

// Assign places the servers of every desired backend into slots, keeping
// each server that already had a slot in prev in that same slot (so its
// health and connections survive). With resize false, a backend keeps its
// slot count and Assign reports the backends whose servers no longer fit.
// With resize true (a reload is happening anyway), a backend is sized to fit
// its servers with headroom; it grows as needed and sheds free slots only
// past its last used one, so no server ever moves.
//
// The slots of a backend with TrackNodes follow the NodesBackend's slot of
// their server's node (model.Slot.Track); with resize, every used slot is
// bound so and every free slot is left unbound.
func Assign(desired model.Config, prev model.Layout, resize bool) (next model.Layout, exhausted []string) {
	next = make(model.Layout, len(desired.Backends))
	var nodes binder
	for i := range nodesFirst(desired.Backends, nil) {
		be := desired.Backends[i]
		old := prev[be.Name]
		size := len(old)
		if old == nil || resize {
			size = max(SlotsFor(len(be.Servers)), be.Slots)
		}
		slots, ok := assignBackend(be.Servers, old, size, resize, nodes.For(be))
		if !ok {
			exhausted = append(exhausted, be.Name)
		}
		next[be.Name] = slots
		if be.Name == model.NodesBackend {
			nodes = newBinder(slots)
		}
	}
	return next, exhausted
}

// AssignFrom is Assign(desired, prev, resize) for a prev that is the
// layout Assign returned for prevDesired (with any resize) without
// reporting an exhausted backend. A backend whose
// servers are the very same slice in both configs (the desired package's
// Memo hands out the same slice while nothing changes) keeps its slots
// without comparing them server by server.
func AssignFrom(desired, prevDesired model.Config, prev model.Layout, resize bool) (next model.Layout, exhausted []string) {
	next, exhausted, _ = AssignDelta(desired, prevDesired, prev, resize)
	return next, exhausted
}

// AssignDelta is AssignFrom, and when next is a copy of prev with only
// some backends' slots made anew, says which (model.LayoutDelta; nil
// otherwise): the structure hash's memo and the driver's changed
// backends then look at those alone, not at every backend of both
// layouts (issue 29).
func AssignDelta(desired, prevDesired model.Config, prev model.Layout, resize bool) (next model.Layout, exhausted []string, delta *model.LayoutDelta) {
	if resize || len(desired.Backends) != len(prevDesired.Backends) {
		next, exhausted = Assign(desired, prev, resize)
		return next, exhausted, nil
	}
	// Start from a copy of prev (cheaper than building the map anew) when
	// it has exactly the desired backends, which is the common case.
	same := len(prev) == len(desired.Backends)
	if same {
		next = maps.Clone(prev)
	} else {
		next = make(model.Layout, len(desired.Backends))
	}
	found := 0
	var rebuilt []string
	var nodes binder
	var flipped map[netip.Addr]bool // nodes whose state changed
	one := func(i int) {
		be := desired.Backends[i]
		old, ok := prev[be.Name]
		if ok {
			found++
		}
		pb := prevDesired.Backends[i]
		if old != nil && pb.Name == be.Name && model.SameSlice(pb.Servers, be.Servers) &&
			!(be.TrackNodes && flipped != nil && hasLoose(old, flipped)) {
			// Assign would find old unchanged: it was built from these
			// servers, all of which it holds.
			if !same {
				next[be.Name] = old
			}
		} else {
			size := len(old)
			if old == nil {
				size = max(SlotsFor(len(be.Servers)), be.Slots)
			}
			slots, ok := assignBackend(be.Servers, old, size, false, nodes.For(be))
			if !ok {
				exhausted = append(exhausted, be.Name)
			}
			next[be.Name] = slots
			if !model.SameSlice(old, slots) {
				rebuilt = append(rebuilt, be.Name)
			}
		}
		if be.Name == model.NodesBackend {
			nodes = newBinder(next[be.Name])
			flipped = flippedNodes(prev[be.Name], next[be.Name])
		}
	}
	if idx, ok := movedOnly(desired, prevDesired, prev, same); ok {
		// Only the backends that are not the very ones of prevDesired at
		// their place are looked at (issue 29: a walk that read every
		// backend's name, 10,000 objects, for one new Service); the
		// others keep prev's slots, which next, a copy, has.
		found = len(desired.Backends) - len(idx)
		if slots, ok := prev[model.NodesBackend]; ok {
			nodes = newBinder(slots) // the nodes' backend is one kept
		}
		for _, i := range idx {
			one(i)
		}
	} else {
		for i := range nodesFirst(desired.Backends, nil) {
			be := desired.Backends[i]
			if same && be == prevDesired.Backends[i] && be.Name != model.NodesBackend && !(be.TrackNodes && flipped != nil) {
				// The very backend of prevDesired at its place: prev
				// (Assign's layout for prevDesired) has its slots, which
				// next, a copy, keeps. Not a lookup of each of 10,000.
				found++
				continue
			}
			one(i)
		}
	}
	if same && found != len(prev) {
		// prev had backends that are not desired (and desired names
		// repeat): drop what the copy kept of them.
		for name := range next {
			if !slices.ContainsFunc(desired.Backends, func(b *model.Backend) bool { return b.Name == name }) {
				delete(next, name)
			}
		}
	}
	if same && found == len(prev) { // no key added or removed
		delta = &model.LayoutDelta{Base: prev, Changed: rebuilt}
	}
	return next, exhausted, delta
}

// ChangedSlots is the part of next whose slots are not the very same
// slice as in prev, or whose backend prev lacks: the backends that may
// need runtime operations. With delta (AssignDelta's, made from prev
// itself) only its Changed backends are looked at; otherwise every one.
func ChangedSlots(next, prev model.Layout, delta *model.LayoutDelta) model.Layout {
	out := make(model.Layout)
	if delta != nil && model.SameLayout(delta.Base, prev) {
		for _, be := range delta.Changed {
			if slots, ok := next[be]; ok && !model.SameSlice(prev[be], slots) {
				out[be] = slots
			}
		}
		return out
	}
	for be, slots := range next {
		old, ok := prev[be]
		if !ok || !model.SameSlice(old, slots) {
			out[be] = slots
		}
	}
	return out
}

func assignBackend(servers []model.Server, old []model.Slot, size int, grow bool, bind binder) ([]model.Slot, bool) {
	if !grow && size == len(old) && unchanged(servers, old, bind) {
		// What the general case below would build, slot for slot.
		return old, true
	}
	return assignSlots(servers, old, size, grow, bind)
}

func assignSlots(servers []model.Server, old []model.Slot, size int, grow bool, bind binder) ([]model.Slot, bool) {
	want := make(map[netip.AddrPort]model.Server, len(servers))
	for _, s := range servers {
		want[s.Key()] = s
	}
	// Keep servers in the slots they had; the last kept slot bounds shrinking.
	// A free slot remembers the address it last pointed at (HAProxy keeps
	// it in maintenance there), so that a server coming back, say after its
	// node was excluded for a while, returns to it and needs no address
	// change.
	// A slot bound to a node keeps its binding (it is configuration)
	// unless a reload happens anyway (grow); it keeps its server only if
	// the server's node is still the one it follows.
	kept := make([]model.Slot, len(old))
	last := -1
	for i, sl := range old {
		kept[i] = model.Slot{Server: lastAddr(sl.Server), Track: sl.Track, Held: sl.Held && !sl.Used && !grow}
		if !sl.Used {
			continue
		}
		if s, ok := want[sl.Server.Key()]; ok && bind.fits(sl, s) {
			kept[i].Used, kept[i].Server = true, s
			delete(want, s.Key())
			last = i
		}
	}
	if size < last+1 {
		size = last + 1
	}
	slots := make([]model.Slot, size)
	for i := range slots {
		if i < len(kept) {
			slots[i] = kept[i]
		} else {
			slots[i] = model.Slot{}
		}
	}
	// New servers first return to a free slot that last pointed at them,
	if len(want) > 0 {
		for i := range slots {
			if sl := &slots[i]; !sl.Used && sl.Server.Addr.IsValid() {
				if s, ok := want[sl.Server.Key()]; ok && (grow || bind.fits(*sl, s)) {
					sl.Used, sl.Held, sl.Server = true, false, s
					delete(want, s.Key())
				}
			}
		}
	}
	// then fill free slots in the desired (sorted) order: without a
	// reload, a slot bound to the server's node first, then an unbound one.
	next := 0
	for _, s := range servers {
		if _, isNew := want[s.Key()]; !isNew {
			continue
		}
		if !grow && bind.m != nil {
			i := bind.freeSlot(slots, s)
			if i < 0 {
				return slots, false
			}
			slots[i].Used, slots[i].Server = true, s
			continue
		}
		for next < len(slots) && (slots[next].Used || slots[next].Held) {
			next++ // a held slot takes back only the server it remembers
		}
		if next == len(slots) {
			if !grow {
				return slots, false
			}
			slots = append(slots, model.Slot{})
		}
		slots[next].Used, slots[next].Server = true, s
	}
	if grow {
		for i := range slots {
			slots[i].Track = 0
			if slots[i].Used {
				slots[i].Track = bind.slotOf(slots[i].Server)
			}
		}
	}
	bind.setMaint(slots)
	return slots, true
}

// unchanged reports whether old already is the assignment of servers: its
// used slots hold exactly servers (state
// included) and its free slots hold at most an address. Passes that change nothing in a
// backend, the vast majority, then reuse its slots as they are.
func unchanged(servers []model.Server, old []model.Slot, bind binder) bool {
	used := 0
	for _, sl := range old {
		if !sl.Used {
			if sl.Server.Drain || sl.Server.Maint {
				return false // assignSlots keeps only the address of a free slot
			}
			continue
		}
		if !bind.fits(sl, sl.Server) || bind.stale(sl) {
			return false
		}
		used++
		k := sl.Server.Key()
		j, found := slices.BinarySearchFunc(servers, k, func(s model.Server, k netip.AddrPort) int { return s.Key().Compare(k) })
		if !found {
			return false
		}
		have := sl.Server
		if bind.m != nil {
			have.Maint = servers[j].Maint // setMaint's to decide: checked by stale above
		}
		if servers[j] != have {
			return false
		}
	}
	if used != len(servers) {
		return false
	}
	for i := 1; i < len(servers); i++ {
		if servers[i-1].Key().Compare(servers[i].Key()) >= 0 {
			return false // not strictly sorted: let the general case decide
		}
	}
	return true
}

// lastAddr is what a slot freed from s remembers: its address and port.
func lastAddr(s model.Server) model.Server {
	return model.Server{Addr: s.Addr, Port: s.Port}
}

// movedOnly lists the places where desired's backend is not the very
// one of prevDesired (pointers compared, no backend read), when AssignDelta
// may look at those alone: next is a copy of prev (same), and neither
// config has the nodes' backend at such a place (a node's change of state
// has the backends that follow their node looked at too: the whole walk).
func movedOnly(desired, prevDesired model.Config, prev model.Layout, same bool) ([]int, bool) {
	if !same {
		return nil, false
	}
	var idx []int
	for i, be := range desired.Backends {
		if be != prevDesired.Backends[i] {
			if be.Name == model.NodesBackend || prevDesired.Backends[i].Name == model.NodesBackend {
				return nil, false
			}
			idx = append(idx, i)
		}
	}
	return idx, true
}
