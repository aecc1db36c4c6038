package desired

import (
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Each memo port's fe points at its frontend in the last Result's array
// (pointFrontends), so that the memo keeps no copy of its own. A delta
// pass makes a new array (spliced: the drivers diff against the old
// one); left as they were, the ports would keep the array of the last
// whole pass alive beside it, for good: 1.7 MB at 10,000 Services (issue
// 29's peak). So the delta pass moves them into its array (repoint),
// which the memo's owners, parallel to the array, make a walk of both
// arrays: a lookup for each frontend added or dropped only.

// repoint points the memo ports of old's frontends (owners, parallel to
// old) and those of the Services just added (added: their fe still their
// own copy) at their frontends in next, which is old with dropped taken
// out and added's put in (spliced; all sorted by name), and returns
// next's owners. If next is not that, it moves none and returns nil: the
// ports keep what they point at (correct, only not smaller).
func repoint(old, next []model.Frontend, owners []*memoPort, dropped []model.Frontend, added []*memoPort) []*memoPort {
	if len(owners) != len(old) || len(next) == 0 {
		return nil
	}
	byName := func(f model.Frontend, name string) int { return strings.Compare(f.Name, name) }
	drops := make([]int, 0, len(dropped)) // places in old
	for _, f := range dropped {
		i, ok := slices.BinarySearchFunc(old, f.Name, byName)
		if !ok {
			return nil
		}
		drops = append(drops, i)
	}
	slices.Sort(drops)
	type place struct {
		at int
		mp *memoPort
	}
	adds := make([]place, 0, len(added)) // places in next
	for _, mp := range added {
		j, ok := slices.BinarySearchFunc(next, mp.fe.Name, byName)
		if !ok {
			return nil
		}
		adds = append(adds, place{j, mp})
	}
	slices.SortFunc(adds, func(a, b place) int { return a.at - b.at })
	out := make([]*memoPort, len(next))
	i, d, a := 0, 0, 0
	for j := range next {
		if a < len(adds) && adds[a].at == j {
			out[j] = adds[a].mp
			a++
			continue
		}
		for d < len(drops) && drops[d] == i {
			i, d = i+1, d+1
		}
		if i >= len(old) || old[i].Name != next[j].Name { // a copy's name: its bytes, compared by address first
			return nil
		}
		out[j] = owners[i]
		i++
	}
	for j, mp := range out {
		if mp != nil {
			mp.fe = &next[j]
		}
	}
	return out
}

// addedPorts is the memo ports of the frontends a delta pass added, once
// its entries are made (delta.go).
func (m *Memo) addedPorts(adds []deltaAdd) []*memoPort {
	var out []*memoPort
	for _, a := range adds {
		e := m.entries[a.c.svc]
		if e == nil {
			continue
		}
		for p := range e.ports {
			if mp := &e.ports[p]; mp.haveProxies && mp.fe != nil {
				out = append(out, mp)
			}
		}
	}
	return out
}
