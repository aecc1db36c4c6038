package gateway

import "github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"

// A kept fragment's backends are put into the pass's backends map
// (fragment, memo.go) by name, each unless one of its name is there.
// Routes share a few backends (at 5,000 routes to two Services, every
// route names one or two of the same): that was 10,000 lookups of a
// name a pass, a sixth of a new route's compute (issue 30). The last
// few backends so put are remembered by pointer: a backend among them
// is in the map already (a pass has one backends map, Compute's, and
// nothing deletes from it), so it is not looked up again. Equal
// results with and without (TestMemoIsTheWholeCompute,
// TestTableMemoIsTheWholeTable); TestRecentBackends.

// recentBackends are the last backends a pass put into its map.
type recentBackends struct {
	b    [8]*model.Backend
	next int
	// Hits counts the backends found among them, for tests.
	Hits int
}

// put puts b into backends (the pass's map) unless a backend of its
// name is there, as a whole pass does.
func (rb *recentBackends) put(backends map[string]*model.Backend, b *model.Backend) {
	for i := range len(rb.b) { // the last put first
		if rb.b[(rb.next+len(rb.b)-1-i)%len(rb.b)] == b {
			rb.Hits++
			return
		}
	}
	if _, ok := backends[b.Name]; !ok {
		backends[b.Name] = b
	}
	rb.b[rb.next] = b
	rb.next = (rb.next + 1) % len(rb.b)
}
