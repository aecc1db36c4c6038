package plan

import (
	"net/netip"
	"slices"
	"sort"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// OpKind is one kind of Runtime API change to a slot.
type OpKind int

const (
	// SetAddr points a slot at Addr:Port.
	SetAddr OpKind = iota
	// Ready puts a slot into service.
	Ready
	// Drain stops new connections to a slot; existing ones continue.
	Drain
	// Maint takes a slot out of service.
	Maint
	// Down forces a checked slot's health down: it serves again once its
	// health check passes (UntilChecked). Its admin state is unchanged.
	Down
	// Create adds a server named Slot at Server to Backend at runtime,
	// in maintenance, with the backend's server settings (the driver
	// writes them): a renewal (renew.go).
	Create
	// Delete removes server Slot of Backend; it must be in maintenance
	// with its connections gone (renew.go).
	Delete
)

func (k OpKind) String() string {
	return [...]string{"addr", "ready", "drain", "maint", "down", "create", "delete"}[k]
}

// Op is one Runtime API operation on one slot.
type Op struct {
	Kind    OpKind
	Backend string
	Slot    string
	Server  model.Server // for SetAddr
}

// Actual is what HAProxy reports for one slot.
type Actual struct {
	Server model.Server // address and port; Drain set when in drain
	Maint  bool
	// Absent: a free slot of the layout that HAProxy does not have yet,
	// which the driver creates at runtime when a server needs it (the
	// config file leaves it out: render.RuntimeSlotsOK). Absent slots
	// are the last of their backend, and also Maint.
	Absent bool
}

// Runtime maps a backend to the states of its slots, in order: element i
// is the slot named model.SlotName(i). Slots are always named so (the
// render package writes them in that order), which lets the state of
// tens of thousands of slots live in one slice per backend instead of one
// map per backend.
type Runtime map[string][]Actual

// Ops lists the operations that bring the runtime state to the layout, in
// a stable order. missing names slots of the layout that HAProxy does not
// have: the running structure is not the one expected, and only a reload
// can fix that.
func Ops(layout model.Layout, rt Runtime) (ops []Op, missing []string) {
	names := make([]string, 0, len(layout))
	for name := range layout {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, be := range names {
		actual := rt[be]
		created := -1 // the absent slots up to this one are created
		for i, sl := range layout[be] {
			if i >= len(actual) {
				missing = append(missing, be+"/"+model.SlotName(i))
				continue
			}
			a := actual[i]
			if a.Absent {
				if sl.WantMaint() && !sl.Used {
					continue // free, and stays so: not created
				}
				// Created in order, the free ones before it too: HAProxy
				// lists servers added at runtime after the others, in the
				// order added, and RuntimeBuilder reads slots in order.
				for j := created + 1; j <= i; j++ {
					if actual[j].Absent {
						ops = append(ops, Op{Kind: Create, Backend: be, Slot: model.SlotName(j), Server: freeServer})
					}
				}
				created = i
				a = Actual{Maint: true, Server: freeServer}
			}
			ops = appendSlotOps(ops, be, i, sl, a)
		}
	}
	return ops, missing
}

// FreeAddr is where a slot created at runtime for a server points until
// its SetAddr (render.FreeSlotAddr).
var FreeAddr = netip.MustParseAddrPort("127.0.0.1:1")

var freeServer = model.Server{Addr: FreeAddr.Addr(), Port: FreeAddr.Port()}

// WithAbsent appends to the states of backend be in rt an absent slot
// (Actual.Absent) for each slot of slots that rt lacks: the free slots
// the config file left out (render.FileSlots). It reports how many.
func (rt Runtime) WithAbsent(be string, slots int) int {
	s := rt[be]
	n := slots - len(s)
	if n <= 0 {
		return 0
	}
	if cap(s)-len(s) < n {
		// Sized once: appended one by one, the states of every spare of
		// a pool grew by doubling, up to twice the slots they hold (15 MB
		// of a 113 MB heap at 10,000 Services with 20 servers each).
		s = append(make([]Actual, 0, slots), s...)
	}
	for range n {
		s = append(s, Actual{Maint: true, Absent: true})
	}
	rt[be] = s
	return n
}

// Present is how many of states HAProxy has: all but the absent ones
// at their end.
func Present(states []Actual) int {
	n := len(states)
	for n > 0 && states[n-1].Absent {
		n--
	}
	return n
}

func appendSlotOps(ops []Op, be string, i int, sl model.Slot, a Actual) []Op {
	op := func(k OpKind) Op { return Op{Kind: k, Backend: be, Slot: model.SlotName(i), Server: sl.Server} }
	if sl.WantMaint() {
		if !a.Maint {
			ops = append(ops, op(Maint))
		}
		if sl.Used && a.Server.Key() != sl.Server.Key() {
			ops = append(ops, op(SetAddr)) // after: the old address gets no new connection
		}
		return ops
	}
	if a.Server.Key() != sl.Server.Key() {
		ops = append(ops, op(SetAddr))
	}
	switch {
	case sl.Server.Drain && (a.Maint || !a.Server.Drain):
		ops = append(ops, op(Drain))
	case !sl.Server.Drain && (a.Maint || a.Server.Drain):
		ops = append(ops, op(Ready))
	}
	return ops
}

// Apply returns rt updated as if ops had succeeded. An operation on a slot
// past the end of its backend's states extends them (with zero states for
// any slot in between); one on a slot whose name is not a slot name
// (model.SlotName) is ignored: Ops never lists such a slot.
func (rt Runtime) Apply(ops []Op) {
	for _, o := range ops {
		i, ok := SlotIndex(o.Slot)
		if !ok {
			continue
		}
		s := rt[o.Backend]
		if i >= len(s) {
			s = append(s, make([]Actual, i+1-len(s))...)
			rt[o.Backend] = s
		}
		a := &s[i]
		switch o.Kind {
		case SetAddr:
			a.Server.Addr, a.Server.Port = o.Server.Addr, o.Server.Port
		case Ready:
			a.Maint, a.Server.Drain = false, false
		case Drain:
			a.Maint, a.Server.Drain = false, true
		case Maint:
			a.Maint, a.Server.Drain = true, false
		case Create:
			*a = Actual{Server: model.Server{Addr: o.Server.Addr, Port: o.Server.Port}, Maint: true}
		}
		// Down changes health, which Actual does not hold; a Delete is
		// followed by the slot's Create (renew.go).
	}
}

// Reasons explains, in a few words each, why the structure of desired
// differs from running: which frontends and backends were added, removed
// or changed. It is only used to log why a reload happens, but runs on
// every reload, so it compares fields rather than printing whole configs.
func Reasons(running, desired model.Config) []string {
	return ReasonsOwn(running, desired, nil)
}

// ReasonsOwn is Reasons about the frontends that have a section of their
// own: those shared (not nil and true: a Service behind the fixed
// listener, whose bind is a map entry and a set element) are left out,
// so a reload that adds the backend pool's spares for a new Service is
// not told as a frontend added. A frontend that leaves the fixed
// listener for a section of its own is told as added, one that joins it
// as removed.
func ReasonsOwn(running, desired model.Config, shared func(model.Frontend) bool) []string {
	var out []string
	out = diff(out, "frontend", own(running.Frontends, shared), own(desired.Frontends, shared),
		func(f *model.Frontend) string { return f.Name }, func(a, b *model.Frontend) bool { return a.Equal(*b) })
	out = diff(out, "backend", running.Backends, desired.Backends,
		func(b **model.Backend) string { return (*b).Name }, func(a, b **model.Backend) bool { return (*a).SameStructure(*b) })
	sort.Strings(out)
	return out
}

// own is fs without those shared says have no section of their own; fs
// itself when shared is nil or takes none.
func own(fs []model.Frontend, shared func(model.Frontend) bool) []model.Frontend {
	if shared == nil || !slices.ContainsFunc(fs, shared) {
		return fs
	}
	return slices.DeleteFunc(slices.Clone(fs), shared)
}

func diff[T any](out []string, kind string, old, new []T, name func(*T) string, same func(a, b *T) bool) []string {
	index := make(map[string]int, len(old))
	for i := range old {
		index[name(&old[i])] = i
	}
	seen := make(map[string]bool, len(new))
	for i := range new {
		n := name(&new[i])
		seen[n] = true
		j, ok := index[n]
		switch {
		case !ok:
			out = append(out, kind+" added "+n)
		case !same(&old[j], &new[i]):
			out = append(out, kind+" changed "+n)
		}
	}
	for i := range old {
		if n := name(&old[i]); !seen[n] {
			out = append(out, kind+" removed "+n)
		}
	}
	return out
}
