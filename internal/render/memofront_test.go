package render

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// memoFrontend is a frontend of kind k behind the fixed listener: 0
// listened, no ranges (no skeleton); 1 listened, restricted (a rule in its
// backend's section); 2 on every address (a section of its own).
func memoFrontend(name string, port uint16, k int) model.Frontend {
	f := model.Frontend{Name: name, Backend: "be_" + name,
		Binds: []model.Bind{{Addr: netip.MustParseAddr("203.0.113.10"), Port: port, Transparent: true}}}
	switch k {
	case 1:
		f.SourceRanges = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	case 2:
		f.Binds = []model.Bind{{Port: port}}
	}
	return f
}

// TestHashMemoRandomFrontends: pass after pass of random edits of the
// frontends behind the fixed listener, most of them the same values as in
// the last pass (as the pool's view keeps them), the memo's hash is
// StructureHash's: frontends of each kind added and removed, a copy with
// new slices, a port, ranges, backend or kind changed, and now and then
// the whole list out of order. It fails if the memo's walk passes a pair
// it should compare, or loses its step.
func TestHashMemoRandomFrontends(t *testing.T) {
	opts := Options{StatsSocket: "/s", ACLDir: "/acl", Listeners: Listeners{Mode: ListenersTProxy}}
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 10))
			var fs []model.Frontend
			var m HashMemo
			n, skipped := 0, 0
			for pass := range 400 {
				fs = slices.Clone(fs)
				sorted := true
				switch k := r.IntN(9); {
				case k == 0 || len(fs) < 4:
					n++
					fs = append(fs, memoFrontend(fmt.Sprintf("fe_%04d", r.IntN(10000)), uint16(20000+n), r.IntN(3)))
				case k == 1:
					i := r.IntN(len(fs))
					fs = slices.Delete(fs, i, i+1)
				case k == 2: // the same value, new slices
					i := r.IntN(len(fs))
					fs[i].Binds = slices.Clone(fs[i].Binds)
				case k == 3:
					i := r.IntN(len(fs))
					fs[i].Binds = []model.Bind{{Addr: fs[i].Binds[0].Addr, Port: uint16(30000 + r.IntN(100)), Transparent: true}}
				case k == 4:
					i := r.IntN(len(fs))
					fs[i].SourceRanges = [][]netip.Prefix{nil, {netip.MustParsePrefix("10.1.0.0/16")}}[r.IntN(2)]
				case k == 5:
					i := r.IntN(len(fs))
					fs[i].Backend = fmt.Sprintf("be_x%d", r.IntN(3))
				case k == 6:
					i := r.IntN(len(fs))
					f := memoFrontend(fs[i].Name, fs[i].Binds[0].Port, r.IntN(3))
					fs[i] = f
				case k == 7 && r.IntN(4) == 0:
					r.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
					sorted = false
				}
				if sorted {
					slices.SortFunc(fs, func(a, b model.Frontend) int { return strings.Compare(a.Name, b.Name) })
				}
				cfg := model.Config{Frontends: fs}
				before := m.renders
				if got, want := m.StructureHash(cfg, nil, opts), StructureHash(cfg, nil, opts); got != want {
					t.Fatalf("pass %d: memo hash %s, want %s", pass, got, want)
				}
				if m.renders == before {
					skipped++
				}
			}
			if skipped < 400/4 {
				t.Errorf("the memo rendered again in %d of 400 passes, want fewer", 400-skipped)
			}
		})
	}
}

// BenchmarkHashMemoNewListened: the memo's walk for a new Service behind
// the fixed listener among n (issue 29): one frontend more, every other
// the same value.
func BenchmarkHashMemoNewListened(b *testing.B) {
	opts := Options{StatsSocket: "/s", ACLDir: "/acl", Listeners: Listeners{Mode: ListenersTProxy}}
	const n = 10000
	fs := make([]model.Frontend, 0, n+1)
	bs := make([]*model.Backend, 0, n)
	for i := range n {
		name := fmt.Sprintf("fe_%05d", 2*i)
		fs = append(fs, memoFrontend(name, uint16(30000+i), 0))
		bs = append(bs, &model.Backend{Name: "be_" + name, Balance: "roundrobin"})
	}
	with := slices.Insert(slices.Clone(fs), n/2, memoFrontend(fmt.Sprintf("fe_%05d", n+1), 20000, 0))
	cfgs := []model.Config{{Frontends: fs, Backends: bs}, {Frontends: with, Backends: bs}}
	var m HashMemo
	m.StructureHash(cfgs[0], nil, opts)
	b.ResetTimer()
	for i := range b.N {
		m.StructureHash(cfgs[(i+1)%2], nil, opts)
	}
	if m.renders != 1 {
		b.Fatalf("%d skeletons rendered, want 1", m.renders)
	}
}
