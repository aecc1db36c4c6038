package render

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/modeledit"
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
// StructureHash's: the edits of modeledit (frontends added and removed,
// binds, backend, PROXY flag, routed), a copy with new slices, ranges or
// kind changed, and now and then the whole list out of order. It fails if the memo's walk passes a pair
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
				sorted := true
				switch k := r.IntN(10); {
				case k < 5 || len(fs) < 4: // added, removed, binds, backend, PROXY, routed
					n++
					fs = modeledit.Frontends(r, fs, func() model.Frontend {
						return memoFrontend(fmt.Sprintf("fe_%04d", r.IntN(10000)), uint16(20000+n), r.IntN(3))
					}, func() model.Bind {
						return model.Bind{Addr: netip.MustParseAddr("203.0.113.10"), Port: uint16(30000 + r.IntN(100)), Transparent: true}
					})
				case k == 5: // the same value, new slices
					fs = slices.Clone(fs)
					i := r.IntN(len(fs))
					fs[i].Binds = slices.Clone(fs[i].Binds)
				case k == 6: // restricted or not
					fs = slices.Clone(fs)
					i := r.IntN(len(fs))
					fs[i].SourceRanges = [][]netip.Prefix{nil, {netip.MustParsePrefix("10.1.0.0/16")}}[r.IntN(2)]
				case k == 7: // another kind
					fs = slices.Clone(fs)
					i := r.IntN(len(fs))
					fs[i] = memoFrontend(fs[i].Name, fs[i].Binds[0].Port, r.IntN(3))
				case k == 8 && r.IntN(4) == 0:
					fs = slices.Clone(fs)
					r.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
					sorted = false
				}
				if sorted && !model.FrontendsSorted(fs) { // after a shuffle: a new slice, the memo holds the last
					fs = slices.SortedFunc(slices.Values(fs), func(a, b model.Frontend) int { return strings.Compare(a.Name, b.Name) })
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
