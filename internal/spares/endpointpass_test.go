package spares

import (
	"bytes"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestOccupyMemoCopiesOnlyWhenASpareChangesHands: an endpoint or node
// pass (a backend's servers change: a new object of the same class, in
// the same spare) gets the very spares of the last pass, no copy of
// the pool (issue 29: ~0.6 MB a pass at 10,000 spares in tproxy mode's
// churn); a pass that changes an occupant gets its own copy and leaves
// the last pass's state as it was. Each result is the whole walk's.
func TestOccupyMemoCopiesOnlyWhenASpareChangesHands(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func([]*model.Backend) []*model.Backend
		shared bool
	}{
		{"servers changed", func(bs []*model.Backend) []*model.Backend {
			nb := *bs[3]
			nb.Servers = []model.Server{{Addr: netip.MustParseAddr("10.9.9.9"), Port: 80}}
			bs[3] = &nb
			return bs
		}, true},
		{"nothing changed", func(bs []*model.Backend) []*model.Backend { return bs }, true},
		{"backend gone", func(bs []*model.Backend) []*model.Backend { return slices.Delete(bs, 3, 4) }, false},
		{"backend new", func(bs []*model.Backend) []*model.Backend {
			return insertSorted(bs, &model.Backend{Name: "be_00003x", Service: "ns/new", Balance: "roundrobin"})
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := Policy{Spares: 5, Other: 1, LowWater: 1}
			cfg, s0 := manyPlaced(20, pol)
			slots := func(string) int { return 8 }
			var m ClassMemo
			s1, _ := m.OccupyFit(s0, cfg, slots)
			before := s1.Clone()
			cfg2 := model.Config{Backends: tc.edit(slices.Clone(cfg.Backends))}
			reused := m.occ.reused
			s2, waiting := m.OccupyFit(s1, cfg2, slots)
			if m.occ.reused != reused+1 {
				t.Fatalf("the pass was not computed from what changed")
			}
			want, wantWaiting := OccupyFit(s1, cfg2, slots)
			if !reflect.DeepEqual(s2, want) || !slices.Equal(waiting, wantWaiting) {
				t.Fatalf("memo %v %v, whole %v %v", occupants(s2), waiting, occupants(want), wantWaiting)
			}
			if shared := &s2.Spares[0] == &s1.Spares[0]; shared != tc.shared {
				t.Errorf("the last pass's spares shared: %v, want %v", shared, tc.shared)
			}
			if !reflect.DeepEqual(s1, before) {
				t.Errorf("the last pass's state changed: %v, was %v", occupants(s1), occupants(before))
			}
		})
	}
}

// TestEncodeMemoSamePool: pool.json of a pass that changed no spare (an
// endpoint pass) is the last output itself, nothing encoded or copied;
// one spare changed, the bytes are Encode's again.
func TestEncodeMemoSamePool(t *testing.T) {
	s := State{Classes: []model.Backend{{Balance: "roundrobin"}}}
	for i := range 50 {
		s.Spares = append(s.Spares, Spare{Name: SpareName(i), Occupant: fmt.Sprintf("be_%d", i)})
	}
	var m EncodeMemo
	first, err := m.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	encoded := m.encoded
	same, err := m.Encode(s.Clone()) // equal, not the same arrays
	if err != nil {
		t.Fatal(err)
	}
	if &same[0] != &first[0] || m.encoded != encoded {
		t.Errorf("an unchanged pool built anew (%d spares encoded)", m.encoded-encoded)
	}
	for _, tc := range []struct {
		name string
		edit func(*State)
	}{
		{"occupant", func(s *State) { s.Spares[7].Occupant = "" }},
		{"class", func(s *State) { s.Classes[0].Balance = "source" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := s.Clone()
			tc.edit(&c)
			got, err := m.Encode(c)
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if err := Encode(&want, c); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Errorf("memo\n%s\nEncode\n%s", got, want.Bytes())
			}
		})
	}
}

// TestClassMemoSameBackendsOnce: Grow after OccupyFit in one pass (the
// same backends, the same classes) gets the classes OccupyFit got, not a
// second slice of them.
func TestClassMemoSameBackendsOnce(t *testing.T) {
	cfg, s := manyPlaced(30, Policy{Spares: 5, Other: 1, LowWater: 1})
	var m ClassMemo
	a := m.of(s, cfg.Backends)
	b := m.of(s, cfg.Backends)
	if &a[0] != &b[0] {
		t.Errorf("the same backends' classes made twice")
	}
	if !slices.Equal(b, s.classesOf(cfg.Backends)) {
		t.Errorf("classes %v, want %v", b, s.classesOf(cfg.Backends))
	}
}

// TestClassMemoWritesTheArrayBeforeTheLast: an endpoint or node pass's
// classes are written into the array of the pass before the last, no
// new array of 10,000 classes a pass (issue 29), unless the occupy memo
// still holds that array (of asked twice between two OccupyFits); the
// classes are always classesOf's.
func TestClassMemoWritesTheArrayBeforeTheLast(t *testing.T) {
	pol := Policy{Spares: 5, Other: 1, LowWater: 1}
	slots := func(string) int { return 8 }
	edit := func(bs []*model.Backend, k int) []*model.Backend {
		bs = slices.Clone(bs)
		nb := *bs[k%len(bs)]
		nb.Servers = []model.Server{{Addr: netip.AddrFrom4([4]byte{10, 9, 9, byte(k)}), Port: 80}}
		bs[k%len(bs)] = &nb
		return bs
	}
	for _, tc := range []struct {
		name  string
		occ   bool // each pass through OccupyFit (else of alone)
		reuse bool // the second pass writes the first OccupyFit's array
	}{
		{"occupy passes", true, true},
		{"of alone, the occupy memo holding the first array", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, s := manyPlaced(40, pol)
			var m ClassMemo
			m.OccupyFit(s, cfg, slots)
			arrays := []*int{&m.class[0]}
			for k := 1; k <= 3; k++ {
				cfg.Backends = edit(cfg.Backends, k)
				var got []int
				if tc.occ {
					s, _ = m.OccupyFit(s, cfg, slots)
					got = m.of(s, cfg.Backends) // Grow's: the same array
				} else {
					got = m.of(s, cfg.Backends)
				}
				if want := s.classesOf(cfg.Backends); !slices.Equal(got, want) {
					t.Fatalf("pass %d: classes %v, want %v", k, got, want)
				}
				arrays = append(arrays, &got[0])
			}
			for k := 1; k < len(arrays); k++ {
				if arrays[k] == arrays[k-1] {
					t.Errorf("pass %d wrote the classes the last pass handed out", k)
				}
			}
			if reused := arrays[2] == arrays[0]; reused != tc.reuse {
				t.Errorf("the second pass wrote the first OccupyFit's array: %v, want %v", reused, tc.reuse)
			}
		})
	}
}
