package runtimeapi

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// TestRangedMemoRandomEdits: pass after pass of random edits to the
// backends HAProxy runs (a spare's backend made again, checking sources
// or not; a backend added or removed; nothing), the ranged spares kept
// from the last pass are render.RangedSpares' whole walk, and the last
// pass's answer is left as it was.
func TestRangedMemoRandomEdits(t *testing.T) {
	o := render.Options{ACLDir: "/acl"}
	o.Listeners.Mode = render.ListenersTProxy
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 29))
			spare := func(i int) *model.Backend {
				return &model.Backend{Name: fmt.Sprintf("%s%d", model.SparePrefix, i), SourceChecked: r.IntN(3) == 0}
			}
			var bs []*model.Backend
			for i := range 30 {
				bs = append(bs, spare(i))
			}
			bs = append(bs, &model.Backend{Name: "be_own", SourceChecked: true}) // not a spare: never ranged
			var m rangedMemo
			edited := 0
			for pass := range 400 {
				bs = slices.Clone(bs)
				switch k := r.IntN(10); {
				case k < 6:
					for range 1 + r.IntN(3) {
						i := r.IntN(len(bs) - 1)
						n, _ := model.SpareIndex(bs[i].Name)
						bs[i] = spare(n)
						edited++
					}
				case k == 6:
					bs = append(bs[:len(bs)-1], spare(30+pass), bs[len(bs)-1])
				case k == 7 && len(bs) > 5:
					i := r.IntN(len(bs) - 1)
					bs = slices.Delete(bs, i, i+1)
				}
				cfg := model.Config{Backends: bs}
				last := slices.Clone(m.ranged)
				lastOf := m.ranged
				got := m.of(cfg, o)
				if want := o.RangedSpares(cfg); !slices.Equal(got, want) {
					t.Fatalf("pass %d: ranged %v, the whole walk %v", pass, got, want)
				}
				if !slices.Equal(lastOf, last) {
					t.Fatalf("pass %d: the last pass's answer changed", pass)
				}
			}
			if edited == 0 {
				t.Fatal("no backend made again")
			}
		})
	}
}
