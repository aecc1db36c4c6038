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
//
// Keyed by the cached object (a pointer: hashed as one, not as three
// strings): an object replaced is another key, and its old entry is
// swept. Under the same result as the enqueue before (a poke from an
// informer, say: a status write landing), a route's wanted parents are
// the ones its entry was checked with, so known reads the entry alone
// and the result is not looked up at all.
type inSync map[any]syncedAs

type syncedAs struct {
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

// known is what the last enqueue found for obj, when it saw it (an
// entry of an older one is swept): valid as it is under the same
// result. The entry is marked seen in enqueue gen.
func (s inSync) known(obj any, gen int) (differs, ok bool) {
	last, found := s[obj]
	if !found || last.seen != gen-1 {
		return false, false
	}
	last.seen = gen
	s[obj] = last
	return last.differs, true
}

// verdict is what was found for obj with want: whether its status
// differed, and whether that is known (ok); the entry is marked seen in
// enqueue gen.
func (s inSync) verdict(obj any, want []gwv1.RouteParentStatus, gen int) (differs, ok bool) {
	last, found := s[obj]
	w := wantOf(want)
	if !found || last.want != w.want || last.n != w.n {
		return false, false
	}
	last.seen = gen
	s[obj] = last
	return last.differs, true
}

// mark records what was found for obj with want in enqueue gen.
func (s inSync) mark(obj any, want []gwv1.RouteParentStatus, differs bool, gen int) {
	w := wantOf(want)
	w.differs, w.seen = differs, gen
	s[obj] = w
}

// sweep drops the objects enqueue gen did not see (replaced, deleted,
// or no longer ours).
func (s inSync) sweep(gen int) {
	for o, e := range s {
		if e.seen != gen {
			delete(s, o)
		}
	}
}
