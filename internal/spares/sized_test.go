package spares

import (
	"fmt"
	"slices"
	"testing"
)

// TestSized: with Policy.Sized each class keeps a free large spare sized
// in steps to its largest backend; OccupyFit moves a backend that
// outgrew its spare into it, and places a new one there when the small
// free spares cannot hold it.
func TestSized(t *testing.T) {
	for _, tc := range []struct{ most, want int }{{0, 16}, {13, 16}, {14, 64}, {51, 64}, {52, 256}, {5000, 256}} {
		if got := largeFor(tc.most); got != tc.want {
			t.Errorf("largeFor(%d) = %d, want %d", tc.most, got, tc.want)
		}
	}
	servers := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("10.0.0.%d:1", i+1))
		}
		return out
	}
	pol := Policy{Spares: 2, Other: 1, LowWater: 1, Sized: true}
	cfg := cfgOf(be("a", 0, servers(2)...))
	occ, waiting := Occupy(State{}, cfg)
	s, _ := Grow(occ, cfg, waiting, pol)
	if got := occupants(s); !slices.Equal(got, []string{"_pool_0=a", "_pool_1=", "_pool_2=", "_pool_3="}) || s.Spares[3].Slots != LargeSlots {
		t.Fatalf("pool %v (%+v), want a, two free spares and a large one", got, s.Spares)
	}
	if _, again := Grow(s, cfg, nil, pol); again {
		t.Errorf("the pool grows again")
	}
	slots := func(name string) int {
		for _, sp := range s.Spares {
			if sp.Name == name {
				return max(sp.Slots, 4)
			}
		}
		return 0
	}
	// b, new, has more servers than a small free spare holds; a outgrows
	// its spare; both fit the large one, b (new) waits its turn: a keeps
	// its spare (it has one), b takes the large one.
	cfg2 := cfgOf(be("a", 0, servers(2)...), be("b", 0, servers(6)...))
	next, waiting := OccupyFit(s, cfg2, slots)
	if got := occupants(next); len(waiting) > 0 || !slices.Equal(got, []string{"_pool_0=a", "_pool_1=", "_pool_2=", "_pool_3=b"}) {
		t.Errorf("b new: %v waiting %v, want b in the large spare", got, waiting)
	}
	cfg3 := cfgOf(be("a", 0, servers(9)...))
	next, _ = OccupyFit(s, cfg3, slots)
	if got := occupants(next); !slices.Equal(got, []string{"_pool_0=", "_pool_1=", "_pool_2=", "_pool_3=a"}) {
		t.Errorf("a outgrown: %v, want a moved to the large spare", got)
	}
	if _, grow := Grow(next, cfg3, nil, pol); !grow {
		t.Errorf("no large spare free and no growth")
	}
}
