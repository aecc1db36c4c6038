package model

import (
	"slices"
	"strings"
)

// FrontendChanges says how a Config's Frontends were made from another
// pass's (issue 29): Of (the Config's Frontends array itself) is Base
// with the frontends named in Names added, removed or replaced; every
// other frontend of Of is, by name, the same (SameFrontend) as Base's.
// The desired package's delta pass (a few Services added or removed)
// sets it; a whole pass leaves it nil: unknown. Consumers that compare
// two passes' frontends may then look at Names alone, when the
// frontends they compare with are Base itself; ignoring it is always
// correct.
type FrontendChanges struct {
	Base  []Frontend
	Of    []Frontend
	Names []string // sorted, each once
}

// FrontendsChangedFrom returns the names of the frontends of c that
// differ from base (see FrontendChanges), and false when c does not say
// (a whole pass, another base, or a stage that made other Frontends).
func (c *Config) FrontendsChangedFrom(base []Frontend) ([]string, bool) {
	fc := c.FrontChanges
	if fc == nil || !SameSlice(fc.Of, c.Frontends) || !SameSlice(fc.Base, base) {
		return nil, false
	}
	return fc.Names, true
}

// ChangedFrontends is the whole walk FrontendChanges.Names stands for:
// the names of the frontends in one of was and now and not the same
// (SameFrontend) in the other, both sorted by name (FrontendsSorted).
func ChangedFrontends(was, now []Frontend) []string {
	var out []string
	i := 0
	for k := range now {
		f := &now[k]
		for i < len(was) && was[i].Name < f.Name {
			out = append(out, was[i].Name)
			i++
		}
		if i < len(was) && was[i].Name == f.Name {
			if !SameFrontend(&was[i], f) {
				out = append(out, f.Name)
			}
			i++
			continue
		}
		out = append(out, f.Name)
	}
	for ; i < len(was); i++ {
		out = append(out, was[i].Name)
	}
	return out
}

// FrontendIndex is where the frontend named name is in fs, sorted by
// name, and whether it is there.
func FrontendIndex(fs []Frontend, name string) (int, bool) {
	return slices.BinarySearchFunc(fs, name, func(f Frontend, n string) int { return strings.Compare(f.Name, n) })
}
