package gateway

import (
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The routes' order kept between passes (issue 30). Compute sorts every
// route by age (older: creation time, then kind, namespace and name),
// and at 5,000 routes that sort was a sixth of a pass. The order of two
// routes is a function of their objects' metadata alone, which an object
// never changes (an update is a new object, and with Memo a new route),
// so the routes of the last pass that are here again, in the last pass's
// order, are in order. A pass places those by the rank they had, sorts
// only the others (a new or changed route: a few) and inserts each where
// a binary search puts it: the same order as sorting them all
// (TestOrderMemoIsTheSort), with a few comparisons instead of ~60,000.

// ranked is a route's place in the last pass's order, valid while the
// route has the metadata it was ranked with (its key is its object's).
type ranked struct {
	by   *orderMemo
	gen  int // the order it is a place of (orderMemo.gen)
	at   int
	meta *metav1.ObjectMeta
}

// orderMemo is the last pass's order. The zero value is ready.
type orderMemo struct {
	gen int // counts the orders made
	n   int // the routes in the last order
	// byRank: the array sorted places the kept routes in, reused (a
	// pass would allocate one of every route); not read between calls.
	byRank []*route
	// Kept and Sorted count the routes placed by rank and those sorted
	// in the last call, for tests and benchmarks.
	Kept, Sorted int
}

// sorted sorts rs (each with its key string made) by older, using the
// ranks of the last call, and ranks them for the next.
func (o *orderMemo) sorted(rs []*route) {
	if cap(o.byRank) < o.n {
		o.byRank = make([]*route, o.n+o.n/8+8) // room for a few more
	}
	byRank := o.byRank[:o.n]
	clear(byRank)
	var fresh []*route
	for _, r := range rs {
		k := &r.rank
		if k.by == o && k.gen == o.gen && k.meta == r.meta && k.at < len(byRank) && byRank[k.at] == nil {
			byRank[k.at] = r
			continue
		}
		fresh = append(fresh, r)
	}
	slices.SortFunc(fresh, func(a, b *route) int { return older(a.meta, b.meta, a.ks, b.ks) })
	kept := slices.DeleteFunc(byRank, func(r *route) bool { return r == nil })
	o.Kept, o.Sorted = len(kept), len(fresh)
	// Merge: each fresh route where a binary search over the kept ones
	// places it (the fresh ones ascending, so their places are too).
	out, from := rs[:0], 0
	for _, f := range fresh {
		at := from + sort.Search(len(kept)-from, func(i int) bool { return older(kept[from+i].meta, f.meta, kept[from+i].ks, f.ks) > 0 })
		out = append(append(out, kept[from:at]...), f)
		from = at
	}
	out = append(out, kept[from:]...)
	clear(kept) // holds no route until the next call
	o.gen++
	o.n = len(out)
	for i, r := range out {
		r.rank = ranked{by: o, gen: o.gen, at: i, meta: r.meta}
	}
}
