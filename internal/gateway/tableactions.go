package gateway

import (
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A table's actions kept in the last table's array while they are the
// same (issue 30): each place's fragment holds its actions as a part of
// the last table's Actions (tableOf points them there), so a pass whose
// places keep their actions where they were hands out the same array,
// and one that only adds places after them (a new route, the youngest)
// writes them into its spare room: no copy of thousands of actions.
// A table is never changed once made, so an index of that array is
// written only past every length a table has had over it (hw); the
// first place that is neither there nor past it copies the actions
// before it into a new array, as every pass did before.

// actionsOf builds a table's Actions from the last table's (base: its
// Actions, hw: the largest length a table has had over that array).
type actionsOf struct {
	base []model.HTTPAction
	hw   int
	n    int                // while sharing base: the length so far
	out  []model.HTTPAction // nil while sharing base
	room int                // the new array's capacity, once copied
}

// add appends a place's actions (a fragment's) at offset a.len().
func (a *actionsOf) add(acts []model.HTTPAction) {
	if a.out == nil {
		off := a.n
		switch {
		case len(acts) == 0:
			return
		case off+len(acts) <= len(a.base) && &acts[0] == &a.base[off]:
			a.n += len(acts) // where it was
			return
		case off >= a.hw && off+len(acts) <= cap(a.base):
			a.base = a.base[:off+len(acts)] // past every table's length: read by none
			copy(a.base[off:], acts)
			a.n += len(acts)
			return
		}
		a.out = append(make([]model.HTTPAction, 0, max(a.room, a.n+len(acts))), a.base[:a.n]...)
	}
	a.out = append(a.out, acts...)
}

func (a *actionsOf) len() int {
	if a.out == nil {
		return a.n
	}
	return len(a.out)
}

// done is the table's Actions; a.hw is then the largest length a table
// has had over their array.
func (a *actionsOf) done() []model.HTTPAction {
	if a.out == nil {
		a.hw = max(a.hw, a.n)
		return a.base[:a.n]
	}
	a.hw = len(a.out)
	return a.out
}

// renumbered are the last table's hosts with their rules' actions at
// their new places (remap), a host copied only when one moved; the
// removed ones are left as they are (dropped by the caller).
func renumbered(hosts []model.HTTPHost, removed map[int]bool, remap []int) []model.HTTPHost {
	out := hosts
	for i, h := range hosts {
		if removed[i] || !slices.ContainsFunc(h.Rules, func(r model.HTTPRule) bool { return remap[r.Action] != r.Action }) {
			continue
		}
		if &out[0] == &hosts[0] {
			out = slices.Clone(hosts) // the last table's are shared: never changed
		}
		rules := slices.Clone(h.Rules)
		for k := range rules {
			rules[k].Action = remap[rules[k].Action]
		}
		out[i].Rules = rules
	}
	return out
}
