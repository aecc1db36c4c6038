package gatewayctl

import (
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// inSync remembers the routes the publisher found carrying the status it
// would write: the cached object and the pass's parents (the slice
// gateway.Compute returned; with its memo, an unchanged route's is the
// very slice of the pass before). While both are the same, the route's
// status is the same too, so enqueue skips it without merging and
// comparing again: a pass that changed one route among thousands costs
// the publisher that route. Used by enqueue only, one goroutine.
type inSync map[item]syncedAs

type syncedAs struct {
	obj  any
	want *gwv1.RouteParentStatus // the parents' first element; nil: none
	n    int
}

func wantOf(want []gwv1.RouteParentStatus) syncedAs {
	s := syncedAs{n: len(want)}
	if len(want) > 0 {
		s.want = &want[0]
	}
	return s
}

// same reports whether it was found in sync as obj with want.
func (s inSync) same(it item, obj any, want []gwv1.RouteParentStatus) bool {
	last, ok := s[it]
	w := wantOf(want)
	return ok && last.obj == obj && last.want == w.want && last.n == w.n
}

// mark records it as found in sync as obj with want.
func (s inSync) mark(it item, obj any, want []gwv1.RouteParentStatus) {
	w := wantOf(want)
	w.obj = obj
	s[it] = w
}
