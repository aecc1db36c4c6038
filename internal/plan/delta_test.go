package plan

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestAssignDeltaRandomEdits: pass after pass of random edits (a
// backend's servers changed, a backend added, removed or renamed, node
// churn under backends that follow their node), AssignDelta gives what
// AssignFrom gives; its delta, when it gives one, is true (every backend it
// does not name holds the very same slots as prev, no key added or
// removed); and ChangedSlots from the delta is the whole walk's.
func TestAssignDeltaRandomEdits(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 10))
			pick := func(base string, n int) []model.Server {
				var out []model.Server
				for i := range n {
					if r.IntN(2) == 0 {
						out = append(out, srv(fmt.Sprintf("%s.%d", base, i+1), 80))
					}
				}
				return out
			}
			prevCfg := model.Config{Backends: []*model.Backend{{Name: model.NodesBackend, Servers: pick("10.9.0", 4)}}}
			for i := range 6 {
				prevCfg.Backends = append(prevCfg.Backends, &model.Backend{Name: fmt.Sprintf("be_%d", i),
					TrackNodes: i%2 == 0, Servers: pick("10.9.0", 4)})
			}
			prev, _ := Assign(prevCfg, nil, false)
			deltas, named := 0, 0
			for pass := range 1500 {
				bs := slices.Clone(prevCfg.Backends)
				switch k := r.IntN(8); {
				case k < 3:
					i := r.IntN(len(bs))
					bs[i] = bs[i].WithServers(pick("10.9.0", 4+r.IntN(4)))
				case k == 3:
					bs[0] = bs[0].WithServers(pick("10.9.0", 4)) // node churn
				case k == 4 && len(bs) > 2:
					i := 1 + r.IntN(len(bs)-1)
					bs = slices.Delete(bs, i, i+1)
				case k == 5:
					bs = append(bs, &model.Backend{Name: fmt.Sprintf("be_n%d", pass), Servers: pick("10.8.0", 4)})
				case k == 6 && len(bs) > 2:
					i := 1 + r.IntN(len(bs)-1)
					c := *bs[i]
					c.Name = fmt.Sprintf("be_r%d", pass) // another set of the same size
					bs[i] = &c
				}
				cfg := model.Config{Backends: bs}
				before := maps.Clone(prev)
				want, wex := AssignFrom(cfg, prevCfg, prev, false)
				got, gex, delta := AssignDelta(cfg, prevCfg, prev, false)
				if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gex, wex) {
					t.Fatalf("pass %d: AssignDelta %v %v, AssignFrom %v %v", pass, got, gex, want, wex)
				}
				// The very backends of the last pass are taken without a
				// look at prev: the same as copies of them (the same
				// servers), which are looked at.
				copies := model.Config{}
				for _, b := range prevCfg.Backends {
					c := *b
					copies.Backends = append(copies.Backends, &c)
				}
				if ref, rex, _ := AssignDelta(cfg, copies, prev, false); !reflect.DeepEqual(got, ref) || !reflect.DeepEqual(gex, rex) {
					t.Fatalf("pass %d: AssignDelta %v %v, from copies of the last backends %v %v", pass, got, gex, ref, rex)
				}
				if !reflect.DeepEqual(prev, before) {
					t.Fatalf("pass %d: prev changed", pass)
				}
				if delta != nil {
					deltas++
					named += len(delta.Changed)
					if !model.SameLayout(delta.Base, prev) || len(got) != len(prev) {
						t.Fatalf("pass %d: delta's base is not prev, or keys added or removed", pass)
					}
					for name, slots := range got {
						if old, ok := prev[name]; !ok || !slices.Contains(delta.Changed, name) && !model.SameSlice(old, slots) {
							t.Fatalf("pass %d: %s changed slots, not in the delta %v", pass, name, delta.Changed)
						}
					}
				}
				whole := ChangedSlots(got, prev, nil)
				if got := ChangedSlots(got, prev, delta); !sameLayoutSlices(got, whole) {
					t.Fatalf("pass %d: ChangedSlots from the delta %v, the whole walk %v", pass, keys(got), keys(whole))
				}
				if len(wex) > 0 {
					want, _ = Assign(cfg, prev, true) // what a reload does
				}
				prevCfg, prev = cfg, want
			}
			if deltas < 1500/3 || named == 0 {
				t.Errorf("a delta in %d of 1500 passes naming %d backends, want more", deltas, named)
			}
		})
	}
}

func sameLayoutSlices(a, b model.Layout) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !model.SameSlice(v, w) {
			return false
		}
	}
	return true
}

func keys(l model.Layout) []string { return slices.Sorted(maps.Keys(l)) }
