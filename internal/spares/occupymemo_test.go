package spares

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestOccupyMemoRandomEdits: pass after pass of random edits to a model
// (Services added, removed, given more or fewer servers than their spare
// has slots, moved to another class), the memo's OccupyFit, given the
// pool it returned, gives what the whole occupyFit gives: the same spares
// kept, freed, moved and taken, the same backends waiting. The pool grows
// only now and then, so that backends wait and outgrown ones stay where
// they are for a few passes; now and then every spare's slots change, as
// read back (SlotsChanged). Most passes are computed from what changed.
func TestOccupyMemoRandomEdits(t *testing.T) {
	pol := Policy{Spares: 3, Other: 1, LowWater: 1, Sized: true}
	for _, seed := range []uint64{1, 2, 3, 4, 5, 6} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 9))
			var bs []*model.Backend
			var s State
			var m ClassMemo
			shift := 0 // the slots read back anew (SlotsChanged)
			slots := func(name string) int { i, _ := SpareIndex(name); return 4 + (i+shift)%3*4 }
			n := 0
			const passes = 400
			for pass := range passes {
				bs = slices.Clone(bs)
				for range 1 + r.IntN(2) {
					bs = randomEdit(r, bs, &n, 14)
				}
				if pass%50 == 49 {
					shift++
					m.SlotsChanged()
				}
				cfg := model.Config{Backends: bs}
				want, wantWaiting := OccupyFit(s, cfg, slots)
				next, waiting := m.OccupyFit(s, cfg, slots)
				if !reflect.DeepEqual(next, want) || !slices.Equal(waiting, wantWaiting) {
					t.Fatalf("pass %d: memo %v waiting %v\nwhole %v waiting %v", pass, occupants(next), waiting, occupants(want), wantWaiting)
				}
				s = next
				if pass%7 == 6 {
					s, _ = m.Grow(next, cfg, waiting, pol)
				}
			}
			if m.occ.reused < passes/2 {
				t.Errorf("%d of %d passes from what changed, want most", m.occ.reused, passes)
			}
		})
	}
}
