package gatewayctl

import (
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// inSync remembers what the publisher found for each route: the cached
// object and the pass's parents (the slice gateway.Compute returned;
// with its memo, an unchanged route's is the very slice of the pass
// before), and whether the route's status differed from them. While
// both are the same, so is the verdict, so enqueue neither merges nor
// compares again: a route in sync is skipped, one that differs is
// queued again (the queue holds it once) until its write lands as a
// new object. A pass that changed one route among thousands, or a
// status write among thousands still to do, costs the publisher that
// route. Kept across enqueues (entries not seen in one are dropped);
// enqueue's alone, one goroutine.
type inSync map[item]syncedAs

type syncedAs struct {
	obj     any
	want    *gwv1.RouteParentStatus // the parents' first element; nil: none
	n       int
	differs bool // the status differed: queued
	seen    int  // the enqueue that last saw it
}

func wantOf(want []gwv1.RouteParentStatus) syncedAs {
	s := syncedAs{n: len(want)}
	if len(want) > 0 {
		s.want = &want[0]
	}
	return s
}

// verdict is what was found for it as obj with want: whether its status
// differed, and whether that is known (ok); the entry is marked seen in
// enqueue gen.
func (s inSync) verdict(it item, obj any, want []gwv1.RouteParentStatus, gen int) (differs, ok bool) {
	last, found := s[it]
	w := wantOf(want)
	if !found || last.obj != obj || last.want != w.want || last.n != w.n {
		return false, false
	}
	last.seen = gen
	s[it] = last
	return last.differs, true
}

// mark records what was found for it as obj with want in enqueue gen.
func (s inSync) mark(it item, obj any, want []gwv1.RouteParentStatus, differs bool, gen int) {
	w := wantOf(want)
	w.obj, w.differs, w.seen = obj, differs, gen
	s[it] = w
}

// sweep drops the routes enqueue gen did not see (deleted, or no longer
// ours).
func (s inSync) sweep(gen int) {
	for it, e := range s {
		if e.seen != gen {
			delete(s, it)
		}
	}
}
