package spares

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestClassMemoRandomEdits: pass after pass of random edits to a model
// (a Service added, removed, its servers changed, its class changed: a
// new object of another structure, one of a class the pool does not
// have yet; the pool's classes numbered anew), the memo's OccupyFit and Grow give what the whole ones give
// (the pool then grows as the driver's pass does), and most classes are
// kept from the last pass.
func TestClassMemoRandomEdits(t *testing.T) {
	pol := Policy{Spares: 3, Other: 1, LowWater: 1, Sized: true}
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 29))
			var bs []*model.Backend
			var s State
			var m ClassMemo
			slots := func(name string) int { i, _ := SpareIndex(name); return 4 + i%3*4 }
			n := 0
			for pass := range 300 {
				bs = randomEdit(r, slices.Clone(bs), &n, 9)
				cfg := model.Config{Backends: bs}
				next, waiting := m.OccupyFit(s, cfg, slots)
				wantNext, wantWaiting := OccupyFit(s, cfg, slots)
				if !reflect.DeepEqual(next, wantNext) || !slices.Equal(waiting, wantWaiting) {
					t.Fatalf("pass %d: OccupyFit %v %v, whole %v %v", pass, occupants(next), waiting, occupants(wantNext), wantWaiting)
				}
				grown, grew := m.Grow(next, cfg, waiting, pol)
				wantGrown, wantGrew := Grow(next, cfg, waiting, pol)
				if grew != wantGrew || !reflect.DeepEqual(grown, wantGrown) {
					t.Fatalf("pass %d: Grow %v %v, whole %v %v", pass, grew, occupants(grown), wantGrew, occupants(wantGrown))
				}
				s = grown
				if pass%25 == 24 && len(s.Classes) > 1 {
					s = reversedClasses(s) // as a pool read back may number them
				}
			}
			if m.kept < 300*len(bs)/2 {
				t.Errorf("%d classes kept in 300 passes of about %d backends, want most", m.kept, len(bs))
			}
		})
	}
}

// reversedClasses is s with its classes numbered the other way round.
func reversedClasses(s State) State {
	s = s.Clone()
	slices.Reverse(s.Classes)
	for i := range s.Spares {
		s.Spares[i].Class = len(s.Classes) - 1 - s.Spares[i].Class
	}
	return s
}

// randomTimeout is one of three server timeouts: three classes, the
// first seen one of them first.
func randomTimeout(r *rand.Rand) time.Duration {
	return time.Duration(r.IntN(3)) * time.Second
}

// randomEdit is bs with one random edit (a Service added, named after
// *n; one removed; its servers, fewer than servers, changed; its class
// changed: a new object of another structure, maybe a class the pool
// does not have yet). bs is edited in place.
func randomEdit(r *rand.Rand, bs []*model.Backend, n *int, servers int) []*model.Backend {
	switch k := r.IntN(6); {
	case k <= 1 || len(bs) < 4:
		*n++
		return insertSorted(bs, be(fmt.Sprintf("svc-%03d", *n), randomTimeout(r), "10.0.0.1:80"))
	case k == 2:
		i := r.IntN(len(bs))
		return slices.Delete(bs, i, i+1)
	case k == 3:
		i := r.IntN(len(bs))
		bs[i] = bs[i].WithServers(make([]model.Server, r.IntN(servers)))
	default:
		i := r.IntN(len(bs))
		c := *bs[i]
		c.TimeoutServer = randomTimeout(r)
		bs[i] = &c
	}
	return bs
}
