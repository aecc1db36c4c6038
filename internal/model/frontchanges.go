package model

import (
	"slices"
	"strings"
)

// FrontendChanges says how a pass's Frontends were made from another
// pass's (issue 29): Of (the pass's Frontends array itself) is Base
// with the frontends named in Names added, removed or replaced; every
// other frontend of Of is, by name, the same (SameFrontend) as Base's.
// The desired package's delta pass (a few Services added or removed)
// says it; a whole pass says nothing (nil: unknown). Consumers that
// compare two passes' frontends may then look at Names alone, when the
// frontends they compare with are Base itself; ignoring it is always
// correct.
//
// It is a value of the pass, never a field of a Config: it travels
// beside the Config (desired.Result.FrontChanges, driver.WithFrontChanges
// in Apply's context), so no Config a driver or memo keeps can carry a
// change list, or hold the Base array alive, past its pass.
type FrontendChanges struct {
	Base  []Frontend
	Of    []Frontend
	Names []string // sorted, each once
}

// ChangedFrom returns the names of the frontends of of that differ from
// base (see FrontendChanges), and false when fc does not say (nil: a
// whole pass; another base; or of is not Of: a stage made other
// Frontends).
func (fc *FrontendChanges) ChangedFrom(of, base []Frontend) ([]string, bool) {
	if fc == nil || !SameSlice(fc.Of, of) || !SameSlice(fc.Base, base) {
		return nil, false
	}
	return fc.Names, true
}

// ChangedFrontends is the whole walk FrontendChanges.Names stands for:
// the names of the frontends in one of was and now and not the same
// (SameFrontend) in the other, both sorted by name (FrontendsSorted).
func ChangedFrontends(was, now []Frontend) []string {
	out, _ := ChangedByName(was, now, func(f *Frontend) string { return f.Name }, SameFrontend)
	return out
}

// ChangedByName lists the names of the elements in one of was and now
// and not the same (same) in the other, both sorted by name (name); false
// when now is not sorted, strictly. The memos that walk two passes side
// by side take it (spares/viewdelta.go: backends by object).
func ChangedByName[T any](was, now []T, name func(*T) string, same func(a, b *T) bool) ([]string, bool) {
	var out []string
	i := 0
	for k := range now {
		e, n := &now[k], name(&now[k])
		if k > 0 && name(&now[k-1]) >= n {
			return nil, false
		}
		for i < len(was) && name(&was[i]) < n {
			out = append(out, name(&was[i]))
			i++
		}
		if i < len(was) && name(&was[i]) == n {
			if !same(&was[i], e) {
				out = append(out, n)
			}
			i++
			continue
		}
		out = append(out, n)
	}
	for ; i < len(was); i++ {
		out = append(out, name(&was[i]))
	}
	return out, true
}

// FrontendIndex is where the frontend named name is in fs, sorted by
// name, and whether it is there.
func FrontendIndex(fs []Frontend, name string) (int, bool) {
	return slices.BinarySearchFunc(fs, name, func(f Frontend, n string) int { return strings.Compare(f.Name, n) })
}
