package plan

import (
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// SlotIndex returns i for the name model.SlotName(i) ("s1" is 0), and
// false for any other name (including "s01" or "s0").
func SlotIndex(name string) (int, bool) {
	if len(name) < 2 || len(name) > 10 || name[0] != 's' || name[1] == '0' {
		return 0, false
	}
	n := 0
	for _, c := range []byte(name[1:]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n - 1, true
}

// RuntimeBuilder assembles a Runtime from the rows of "show servers state",
// which HAProxy lists backend by backend, each backend's servers in
// configuration order. A backend whose servers are not named s1, s2, ...
// in that order is a structure this controller did not render: it is left
// out of the Runtime, so that Ops reports its slots missing, and listed by
// Finish. The twins of a renewal (TwinName) are no such servers: they are
// reported apart (Twins), the slots around them still in order. The zero
// value is ready to use.
type RuntimeBuilder struct {
	rt      Runtime
	twins   Twins // twins a renewal left (TwinName), by backend
	foreign []string
	skip    map[string]bool // backends found foreign
	be      string          // backend of cur (an owned copy)
	cur     []Actual        // its states so far; reused between backends
	open    bool            // cur belongs to be
}

// Add records the state of server srv of backend be. It keeps be as the
// backend's name in the Runtime (no copy per backend): be must not be a
// view of a buffer that is reused, which the rows of
// haproxy.ScanServersState are not.
func (b *RuntimeBuilder) Add(be, srv string, a Actual) {
	if !b.open || be != b.be {
		b.flush()
		if b.skip[be] {
			return
		}
		if b.rt == nil {
			b.rt = make(Runtime)
		}
		// Rows of one backend are consecutive; should it come back later,
		// continue its slots.
		b.be, b.cur, b.open = be, append(b.cur[:0], b.rt[be]...), true
	}
	if i, ok := TwinIndex(srv); ok {
		// A renewal's twin (Renew) is listed after the slots or before
		// them (the slots created again after it): the slots stay in
		// order around it.
		if b.twins == nil {
			b.twins = Twins{}
		}
		if b.twins[be] == nil {
			b.twins[be] = map[int]Actual{}
		}
		b.twins[be][i] = a
		return
	}
	if i, ok := SlotIndex(srv); !ok || i != len(b.cur) {
		b.markForeign()
		return
	}
	b.cur = append(b.cur, a)
}

// Twins returns the twins found in the backends that are not foreign,
// after Finish.
func (b *RuntimeBuilder) Twins() Twins {
	for be := range b.twins {
		if b.skip[be] {
			delete(b.twins, be)
		}
	}
	return b.twins
}

// markForeign drops the current backend for good.
func (b *RuntimeBuilder) markForeign() {
	if b.skip == nil {
		b.skip = make(map[string]bool)
	}
	b.skip[b.be] = true
	b.foreign = append(b.foreign, b.be)
	delete(b.rt, b.be)
	b.open = false
}

// flush stores the current backend's states in a slice of their exact
// size: the scratch slice is reused for the next backend.
func (b *RuntimeBuilder) flush() {
	if b.open {
		b.rt[b.be] = slices.Clone(b.cur)
		b.open = false
	}
}

// Finish returns the Runtime and the backends left out as foreign, in the
// order they were found. The builder must not be used afterwards.
func (b *RuntimeBuilder) Finish() (rt Runtime, foreign []string) {
	b.flush()
	if b.rt == nil {
		b.rt = make(Runtime)
	}
	return b.rt, b.foreign
}

// Layout returns the layout that rt describes: a slot in maintenance is
// free and remembers its address, any other slot holds the server it
// points at.
func (rt Runtime) Layout() model.Layout {
	layout := make(model.Layout, len(rt))
	for be, states := range rt {
		slots := make([]model.Slot, len(states))
		for i, a := range states {
			slots[i] = model.Slot{Used: !a.Maint, Server: a.Server}
		}
		layout[be] = slots
	}
	return layout
}
