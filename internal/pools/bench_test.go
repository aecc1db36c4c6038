package pools

import (
	"fmt"
	"testing"
)

// BenchmarkAllocate: n Services from one pool, first from nothing (a
// controller's first pass), then from their statuses (every later pass).
// Run here at 2,000 (the machines are shared; 10,000 is for a quiet one:
// -bench . -args -n 10000 is not wired, change n).
func BenchmarkAllocate(b *testing.B) {
	const n = 2000
	pools := []Pool{{Name: "p", Ranges: []Range{rg("198.18.0.0/16")}, AutoAssign: true}}
	reqs := make([]Request, n)
	for i := range reqs {
		reqs[i] = req(fmt.Sprintf("ns/s%05d", i))
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			Allocate(pools, reqs)
		}
	})
	first := Allocate(pools, reqs)
	kept := make([]Request, n)
	for i, r := range reqs {
		r.Current = first.Assigned[r.Key]
		kept[i] = r
	}
	b.Run("from-status", func(b *testing.B) {
		for b.Loop() {
			Allocate(pools, kept)
		}
	})
}
