package render

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestHashMemoRandomEdits: pass after pass of random edits, most
// backends the same objects as in the last pass (as desired and the
// pool's view keep them), the memo's hash is StructureHash's: a backend
// replaced by one with other servers only (no render), with another
// setting, its slots resized or following a node while the backend is
// the same object, backends added and removed. With deltas, each pass
// but those that add or remove a backend hands the memo the layout's
// model.LayoutDelta (plan.AssignDelta's), naming the slots it resized or
// bound.
func TestHashMemoRandomEdits(t *testing.T) {
	for _, deltas := range []bool{false, true} {
		t.Run(fmt.Sprint("deltas ", deltas), func(t *testing.T) { hashMemoRandomEdits(t, deltas) })
	}
}

func hashMemoRandomEdits(t *testing.T, deltas bool) {
	opts := Options{StatsSocket: "/s"}
	slots := func(n int) []model.Slot {
		return make([]model.Slot, n)
	}
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 29))
			var bs []*model.Backend
			layout := model.Layout{}
			var m HashMemo
			n, between := 0, 0
			for pass := range 300 {
				base := layout
				bs, layout = slices.Clone(bs), maps.Clone(layout)
				delta := &model.LayoutDelta{Base: base}
				switch k := r.IntN(7); {
				case k == 0 || len(bs) < 3:
					n++
					b := &model.Backend{Name: fmt.Sprintf("be_%03d", n), Balance: "roundrobin"}
					bs = append(bs, b)
					layout[b.Name] = slots(4)
					delta = nil
				case k == 1:
					i := r.IntN(len(bs))
					delete(layout, bs[i].Name)
					bs = slices.Delete(bs, i, i+1)
					delta = nil
				case k == 2:
					i := r.IntN(len(bs))
					bs[i] = bs[i].WithServers(make([]model.Server, r.IntN(3)))
				case k == 3:
					i := r.IntN(len(bs))
					c := *bs[i]
					c.Balance = []string{"roundrobin", "leastconn"}[r.IntN(2)]
					bs[i] = &c
				case k == 4:
					name := bs[r.IntN(len(bs))].Name
					layout[name] = slots(4 + 4*r.IntN(2))
					delta.Changed = append(delta.Changed, name)
				case k == 5:
					name := bs[r.IntN(len(bs))].Name
					s := slices.Clone(layout[name])
					s[0].Track = uint16(r.IntN(2))
					layout[name] = s
					delta.Changed = append(delta.Changed, name)
				}
				if !deltas {
					delta = nil
				}
				cfg := model.Config{Backends: bs}
				if deltas && len(bs) > 0 && r.IntN(8) == 0 {
					// Another layout hashed in between (the driver's
					// wouldReload): the delta's base is not the memo's
					// last layout, and must be ignored.
					between++ // two renders more: this one, and the pass's
					other := maps.Clone(layout)
					other[bs[r.IntN(len(bs))].Name] = slots(12)
					if got, want := m.StructureHash(cfg, other, opts), StructureHash(cfg, other, opts); got != want {
						t.Fatalf("pass %d, in between: memo hash %s, want %s", pass, got, want)
					}
				}
				if got, want := m.StructureHashFrom(cfg, layout, opts, delta), StructureHash(cfg, layout, opts); got != want {
					t.Fatalf("pass %d: memo hash %s, want %s", pass, got, want)
				}
			}
			if m.renders > 300*3/4+2*between {
				t.Errorf("%d skeletons rendered in 300 passes, want fewer", m.renders)
			}
		})
	}
}
