package gateway

import (
	"cmp"
	"slices"
	"sort"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// rebuild takes the dirty hosts out of the last table and builds them
// again where they still have rules, in their places, from the index
// (brought to the new slots); renumber: the kept hosts' actions moved
// (remap: an action's new place).
func (tm *tableMemo) rebuild(dirty map[string]bool, renumber bool, remap []int) {
	type placed struct {
		at    int
		owner int
		host  model.HTTPHost
	}
	hosts, owner := tm.t.Hosts, tm.owner
	removed := map[int]bool{}
	var add []placed
	for h := range dirty {
		if o, ok := tm.owners[h]; ok {
			removed[tm.find(o, h)] = true
			delete(tm.owners, h)
		}
		for i, in := range tm.ls {
			if len(in.byHost[h]) > 0 {
				tm.owners[h] = i
				add = append(add, placed{owner: i, host: in.host(h)})
				break
			}
		}
	}
	for i := range add {
		add[i].at = tm.find(add[i].owner, add[i].host.Name)
		tm.countHost(&add[i].host, 1) // tableshape.go
	}
	for i := range removed {
		tm.countHost(&hosts[i], -1)
	}
	if renumber {
		hosts = renumbered(hosts, removed, remap)
	}
	slices.SortFunc(add, func(a, b placed) int { return cmpHost(a.owner, a.host.Name, b.owner, b.host.Name) })
	nh := make([]model.HTTPHost, 0, len(hosts)+len(add)-len(removed))
	no := slices.Grow(tm.owner0[:0], cap(nh))
	// The kept hosts copied in runs between the places where a host is
	// added (before the last table's host at) or removed.
	rm := make([]int, 0, len(removed))
	for i := range removed {
		rm = append(rm, i)
	}
	slices.Sort(rm)
	for from, next, r := 0, 0, 0; ; {
		to := len(hosts)
		if next < len(add) {
			to = min(to, add[next].at)
		}
		if r < len(rm) {
			to = min(to, rm[r])
		}
		nh, no = append(nh, hosts[from:to]...), append(no, owner[from:to]...)
		for ; next < len(add) && add[next].at == to; next++ {
			nh, no = append(nh, add[next].host), append(no, add[next].owner)
		}
		switch {
		case r < len(rm) && rm[r] == to:
			r, from = r+1, to+1
		case to == len(hosts):
			tm.t = &model.HTTP{Hosts: nh}
			tm.owner, tm.owner0 = no, tm.owner
			if len(nh) == 0 {
				tm.t.Hosts = nil // as httpTable leaves it
			}
			return
		default:
			from = to
		}
	}
}

// find is the place in the last table of host h of listener o, or
// where it would be.
func (tm *tableMemo) find(o int, h string) int {
	hosts := tm.t.Hosts
	return sort.Search(len(hosts), func(i int) bool { return cmpHost(tm.owner[i], hosts[i].Name, o, h) >= 0 })
}

// cmpHost is the table's order of hosts: by the listener that has
// them, then precedenceAny.
func cmpHost(o1 int, h1 string, o2 int, h2 string) int {
	if c := cmp.Compare(o1, o2); c != 0 {
		return c
	}
	return precedenceAny(h1, h2)
}
