package gateway

import "github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"

// A table's shape kept with its memo (issue 30): model.HTTPShape, what
// the fixed rules of an HTTP frontend are written from besides its maps
// (the header sets its rules match on, the header names its actions
// change, access). Each time the driver asked for it, it walked every
// rule of every host and every action of the table (~0.7 ms at 5,000
// routes; the maps' memo asks every pass, the structure hash when the
// table changed). The table memo keeps it instead:
//
//   - the header sets counted by the table's hosts' rules, updated from
//     the hosts an update builds again or removes (O(change)), the sorted
//     list made again only when a set comes or goes;
//   - the actions' names kept per fragment (made once per compiled
//     route, model.ActionNames, nil for most), added up over the table's
//     places as they are laid out (a nil check a place).
//
// The table's Shape is then set; it equals model.ShapeOf of the table
// (TestMemoIsTheWholeCompute, TestTableMemoIsTheWholeTable check each
// pass's).

// headerSet is one set of header names and the number of the table's
// rules matching on it.
type headerSet struct {
	names []string
	n     int
}

// countHost adds d (1 or -1) for each rule of host h to its header set.
func (tm *tableMemo) countHost(h *model.HTTPHost, d int) {
	for i := range h.Rules {
		tm.nameBuf = h.Rules[i].AppendMatchNames(tm.nameBuf[:0])
		if len(tm.nameBuf) == 0 {
			continue // the empty set: always there
		}
		tm.keyBuf = tm.keyBuf[:0]
		for _, n := range tm.nameBuf {
			tm.keyBuf = append(append(tm.keyBuf, n...), 0)
		}
		s := tm.sets[string(tm.keyBuf)]
		if s == nil {
			s = &headerSet{names: append([]string(nil), tm.nameBuf...)}
			tm.sets[string(tm.keyBuf)] = s
			tm.hsets = nil
		}
		if s.n += d; s.n <= 0 {
			delete(tm.sets, string(tm.keyBuf))
			tm.hsets = nil
		}
	}
}

// countAll counts every host of tm.t afresh.
func (tm *tableMemo) countAll() {
	tm.sets, tm.hsets = map[string]*headerSet{}, nil
	for i := range tm.t.Hosts {
		tm.countHost(&tm.t.Hosts[i], 1)
	}
}

// headerSets is model.HTTP.HeaderSets of tm's table: the empty set, then
// the counted ones sorted. The slice is shared by the tables made while
// no set comes or goes: never changed.
func (tm *tableMemo) headerSets() [][]string {
	if tm.hsets == nil {
		out := make([][]string, 1, len(tm.sets)+1)
		out[0] = []string{}
		for _, s := range tm.sets {
			out = append(out, s.names)
		}
		model.SortHeaderSets(out[1:])
		tm.hsets = out
	}
	return tm.hsets
}

// actionNames is f's part of its table's shape (model.ActionNames),
// made once per fragment; nil when it gives nothing.
func (f *fragment) actionNames() *model.HTTPShape {
	if !f.named {
		f.names, f.named = model.ActionNames(f.actions), true
	}
	return f.names
}

// shapeOf is the shape of tm's table whose places' action parts were
// added up into acts.
func (tm *tableMemo) shapeOf(acts model.HTTPShape) *model.HTTPShape {
	acts.SortNames()
	acts.HeaderSets = tm.headerSets()
	return &acts
}
