// Package spares is the pool of ready backends, one level up from the
// server slots of internal/plan: spare HAProxy backends (`_pool_N`) are
// rendered ahead of need, each with server slots in maintenance, and a
// new model backend takes a free spare of its class with no reload: its
// servers go into the spare's slots through the Runtime API, and whatever
// names backends in HAProxy's data (route maps, a listener map) names the
// spare. When the model backend goes, its spare is cleaned (its slots back
// to maintenance) and free again.
//
// A backend's structural settings (balance, check, timeouts, PROXY
// protocol, affinity, track nodes: everything model.Backend.SameStructure
// compares but its names) can only change through a reload, so spares are
// grouped into classes of those settings, and a model backend only takes a
// spare of its own class.
//
// Everything here is pure: Occupy decides which spare each model backend
// occupies (stable: a backend keeps its spare while it exists and its
// class does not change), Grow how the pool grows, and View turns a model
// into the model HAProxy runs, in HAProxy's names, for the unchanged plan,
// render and driver code. State is what a driver persists so that a
// restart converges to the same assignment.
package spares

import (
	"slices"
	"strconv"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Prefix starts every spare's name (model.SparePrefix).
const Prefix = model.SparePrefix

// SpareName is the name of the spare numbered i.
func SpareName(i int) string { return Prefix + strconv.Itoa(i) }

// SpareIndex is the number of the spare named name, false when name is not
// a spare's (model.SpareIndex).
func SpareIndex(name string) (int, bool) { return model.SpareIndex(name) }

// Policy sizes the pool. The zero Policy is no pool.
type Policy struct {
	// Spares is how many free spares the default class (the class most
	// model backends have) keeps ready; 0: no pool.
	Spares int
	// Other is how many free spares every other class in use keeps.
	Other int
	// LowWater: the pool grows when a class in use has fewer free spares
	// than this (at most its target), or a backend waits for one.
	LowWater int
	// SourceTwin: the default class's twin (its settings, the other
	// model.Backend.SourceChecked) keeps Other free spares too, as a
	// class in use does: behind the fixed listener, a Service whose
	// source ranges come or go takes one with no reload (sourced.go).
	SourceTwin bool
	// Sized: every class in use also keeps one free large spare, sized
	// to its largest backend (sized.go).
	Sized bool
}

// On reports whether p makes a pool.
func (p Policy) On() bool { return p.Spares > 0 }

// Spare is one spare backend.
type Spare struct {
	Name     string `json:"name"`
	Class    int    `json:"class"`              // index in State.Classes
	Occupant string `json:"occupant,omitempty"` // the model backend in it; "" when free
	Slots    int    `json:"slots,omitempty"`    // at least this many server slots (model.Backend.Slots; sized.go)
}

// State is the pool: its classes (each a backend's structure with no name,
// Service or servers) and its spares, sorted by number.
type State struct {
	Classes []model.Backend `json:"classes"`
	Spares  []Spare         `json:"spares"`
}

// classOf returns the index of b's class in s, -1 when s has none.
func (s State) classOf(b *model.Backend) int {
	k := classKey(b)
	return slices.IndexFunc(s.Classes, func(c model.Backend) bool { return c.SameStructure(&k) })
}

// classKey is b's class: its structure without names and servers.
func classKey(b *model.Backend) model.Backend {
	c := b.Structure()
	c.Name, c.Service = "", ""
	return c
}

// pooled reports whether a model backend goes into the pool: a Service's
// (or a route's, TCP, TLS or HTTP) backend, not one of the controller's
// own (`_nodes`, `_reject`: names that start with "_").
func pooled(b *model.Backend) bool { return b.Name != "" && b.Name[0] != '_' }

// HAProxyBackend is the HAProxy backend that serves the model backend
// name: the spare it occupies, or name itself when it occupies none (no
// pool, or a backend of the controller's own). Everything that names a
// backend in HAProxy's data names this one: route maps, the HTTP maps,
// the fixed listeners' map (`listeners.map`), a per-port frontend's
// default_backend (all of them read from View, whose frontends, routes
// and HTTP tables name it).
func (s State) HAProxyBackend(name string) string {
	if i := s.index()[name]; i > 0 {
		return s.Spares[i-1].Name
	}
	return name
}

// ModelBackend is the model backend a HAProxy backend serves: the
// occupant of a spare, "" for a free spare, or name itself for a backend
// that is no spare. Stats and status rows are per HAProxy backend: this
// names them after what the user created.
func (s State) ModelBackend(haproxyName string) string {
	if _, ok := SpareIndex(haproxyName); !ok {
		return haproxyName
	}
	for _, sp := range s.Spares {
		if sp.Name == haproxyName {
			return sp.Occupant
		}
	}
	return ""
}

// index maps each occupant to 1 + its spare's index in s.Spares.
func (s State) index() map[string]int {
	out := make(map[string]int, len(s.Spares))
	for i, sp := range s.Spares {
		if sp.Occupant != "" {
			out[sp.Occupant] = i + 1
		}
	}
	return out
}

// Free counts the free spares of each class.
func (s State) Free() []int {
	out := make([]int, len(s.Classes))
	for _, sp := range s.Spares {
		if sp.Occupant == "" && sp.Class >= 0 && sp.Class < len(out) {
			out[sp.Class]++
		}
	}
	return out
}

// Clone is a deep copy of s.
func (s State) Clone() State {
	return State{Classes: slices.Clone(s.Classes), Spares: slices.Clone(s.Spares)}
}

// Occupy places every pooled backend of cfg into a spare of its class:
// a backend keeps the spare it had in prev while it exists and its class
// is the same; a spare whose occupant is gone, or changed class, is free
// again, though not taken by another in this same pass (its slots are
// cleaned first); the others take the free spare of their class with the
// lowest number, in the order of their names. Backends for which no
// spare is free are waiting, in that order: they wait for Grow. The
// classes and spares of prev stay (a spare goes only with a reload that
// Grow decides).
func Occupy(prev State, cfg model.Config) (next State, waiting []string) {
	return OccupyFit(prev, cfg, nil)
}

// OccupyFit is Occupy knowing how many slots each spare has (slots; nil:
// none known, as Occupy): a backend whose servers outgrow its spare's
// slots moves to a free spare of its class that holds them, when one is
// (a map change: sized.go), and a new backend takes the lowest free spare
// of its class that holds its servers, or else the lowest free one.
func OccupyFit(prev State, cfg model.Config, slots func(spare string) int) (next State, waiting []string) {
	return occupyFit(prev, cfg, slots, prev.classesOf(cfg.Backends))
}

// occupyFit is OccupyFit given each backend's class in prev (cls, by
// index in cfg.Backends: classesOf).
func occupyFit(prev State, cfg model.Config, slots func(spare string) int, cls []int) (next State, waiting []string) {
	next = prev.Clone()
	want := make(map[string]int, len(cfg.Backends)) // name -> index in cfg.Backends
	for j, b := range cfg.Backends {
		if pooled(b) {
			want[b.Name] = j
		}
	}
	fits := func(i int, b *model.Backend) bool {
		return slots == nil || len(b.Servers) <= slots(next.Spares[i].Name)
	}
	placed := make([]bool, len(cfg.Backends))
	freed := make([]bool, len(next.Spares))
	var outgrown []int // spares whose occupant outgrew them
	for i := range next.Spares {
		sp := &next.Spares[i]
		if sp.Occupant == "" {
			continue
		}
		j, ok := want[sp.Occupant]
		if ok && !placed[j] && next.sameClass(sp.Class, cls[j]) {
			placed[j] = true
			if !fits(i, cfg.Backends[j]) {
				outgrown = append(outgrown, i)
			}
			continue
		}
		sp.Occupant, freed[i] = "", true
	}
	free := func(c int, b *model.Backend, fit bool) int {
		return bestFree(next.Spares, c, func(i int) bool { return !freed[i] && (!fit || fits(i, b)) })
	}
	for _, i := range outgrown {
		b := cfg.Backends[want[next.Spares[i].Occupant]]
		if j := free(next.Spares[i].Class, b, true); j >= 0 {
			next.Spares[j].Occupant = b.Name
			next.Spares[i].Occupant, freed[i] = "", true
		}
	}
	for j, b := range cfg.Backends { // sorted by name
		if !pooled(b) || placed[j] {
			continue
		}
		c := cls[j]
		i := free(c, b, true)
		if i < 0 {
			i = free(c, b, false)
		}
		if i < 0 {
			waiting = append(waiting, b.Name)
			continue
		}
		next.Spares[i].Occupant = b.Name
		placed[j] = true
	}
	return next, waiting
}

// sameClass reports whether the classes numbered a and b of s are the
// same structure (b -1: none, never the same).
func (s State) sameClass(a, b int) bool {
	return b >= 0 && (a == b || a >= 0 && a < len(s.Classes) && s.Classes[a].SameStructure(&s.Classes[b]))
}

func ptr[T any](v T) *T { return &v }

// Grow reports whether the pool must grow (a reload) and how: it does
// when a backend waits for a spare, or a class in use has fewer free
// spares than the low-water mark (at most the class's target). The grown
// pool adds, per class, the spares its waiting backends need plus enough
// to bring its free spares up to its target (Policy.Spares for the
// default class, the one most backends of cfg have, Policy.Other for the
// others), numbered after the last spare, and places the waiting backends
// in them. Classes are added for the waiting backends' own; nothing is
// removed.
func Grow(s State, cfg model.Config, waiting []string, pol Policy) (grown State, grow bool) {
	return growBy(s, cfg, waiting, pol, s.classesOf(cfg.Backends))
}

// growBy is Grow given each backend's class in s (cls, by index in
// cfg.Backends: classesOf).
func growBy(s State, cfg model.Config, waiting []string, pol Policy, cls []int) (grown State, grow bool) {
	if !pol.On() {
		return s, false
	}
	// The spares are copied only once the pool grows: a pass that does
	// not grow (nearly every one) reads them (Free, sizing), and a copy
	// of 10,000 spares a pass was a megabyte for one new Service
	// (issue 29). The classes are copied now: a class may be added below.
	grown = State{Classes: slices.Clone(s.Classes), Spares: s.Spares}
	// cls is the caller's (ClassMemo keeps it): copied only when a
	// backend's class is filled in below, not 10,000 ints a pass.
	clsOwned := false
	// Counted by class index first (a few classes), then the classes in
	// use as a map: not a map update per backend, 10,000 a pass.
	count := make([]int, len(grown.Classes))
	for j, b := range cfg.Backends {
		if !pooled(b) {
			continue
		}
		c := cls[j]
		if c < 0 {
			if c = grown.classOf(b); c < 0 { // a class added for an earlier one
				grown.Classes = append(grown.Classes, classKey(b))
				c = len(grown.Classes) - 1
			}
			if !clsOwned {
				cls, clsOwned = slices.Clone(cls), true
			}
			cls[j] = c
		}
		for c >= len(count) {
			count = append(count, 0)
		}
		count[c]++
	}
	use := make(map[int]int, len(count)) // class -> backends of cfg in it
	for c, n := range count {
		if n > 0 {
			use[c] = n
		}
	}
	def := -1
	for c, n := range use {
		if def < 0 || n > use[def] || n == use[def] && c < def {
			def = c
		}
	}
	if pol.SourceTwin && def >= 0 {
		k := twin(grown.Classes[def])
		c := slices.IndexFunc(grown.Classes, func(b model.Backend) bool { return b.SameStructure(&k) })
		if c < 0 {
			grown.Classes = append(grown.Classes, k)
			c = len(grown.Classes) - 1
		}
		use[c] += 0 // in use: kept at Other free spares
	}
	target := func(c int) int {
		if c == def {
			return pol.Spares
		}
		return pol.Other
	}
	free := grown.Free()
	grow = len(waiting) > 0
	var large, size map[int]int
	if pol.Sized {
		large, size = grown.sizing(cfg, cls, use)
	}
	for c := range use {
		if free[c] < lowWater(pol, target(c), use[c]) || large[c] > 0 {
			grow = true
		}
	}
	if !grow {
		return s, false
	}
	grown.Spares = slices.Clone(s.Spares)
	grown.resizeFree(size)
	next := 0
	if n := len(grown.Spares); n > 0 {
		next, _ = SpareIndex(grown.Spares[n-1].Name)
		next++
	}
	add := func(c int, occupant string) {
		grown.Spares = append(grown.Spares, Spare{Name: SpareName(next), Class: c, Occupant: occupant, Slots: size[c]})
		next++
	}
	addLarge := func(c int) {
		grown.Spares = append(grown.Spares, Spare{Name: SpareName(next), Class: c, Slots: large[c]})
		next++
	}
	if len(waiting) > 0 {
		at := make(map[string]int, len(cfg.Backends))
		for j, b := range cfg.Backends {
			if pooled(b) {
				at[b.Name] = j
			}
		}
		for _, name := range waiting {
			if j, ok := at[name]; ok {
				add(cls[j], name)
			}
		}
	}
	classes := make([]int, 0, len(use))
	for c := range use {
		classes = append(classes, c)
	}
	slices.Sort(classes)
	for _, c := range classes {
		for n := free[c]; n < fill(pol, target(c), use[c]); n++ {
			add(c, "")
		}
		if large[c] > 0 {
			for range largeBatch(pol, use[c]) {
				addLarge(c)
			}
		}
	}
	return grown, true
}

// Freed lists the spares that had an occupant in prev and are free in
// next, whose class keeps a stick table (ClientIP affinity): the driver
// clears their tables, so that the next occupant's clients stick to
// nothing of the old one's.
func Freed(prev, next State) []string {
	if !slices.ContainsFunc(next.Classes, func(c model.Backend) bool { return c.Affinity > 0 }) {
		return nil // no stick table to clear (and no map of every spare built)
	}
	var out []string
	was := make(map[string]string, len(prev.Spares))
	for _, sp := range prev.Spares {
		was[sp.Name] = sp.Occupant
	}
	for _, sp := range next.Spares {
		if sp.Occupant == "" && was[sp.Name] != "" && next.Classes[sp.Class].Affinity > 0 {
			out = append(out, sp.Name)
		}
	}
	return out
}
