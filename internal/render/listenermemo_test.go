package render

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/modeledit"
)

// TestListenerMemoRandomEdits: pass after pass of random edits to a
// model's frontends (Services added and removed, a bind added, moved
// onto another's key or dropped, a backend renamed, the PROXY flag
// flipped, a frontend routed), the memo's entries are ListenerEntries'
// whole computation, and its edits take the last pass's entries to the
// new ones. Unchanged frontends are the very same objects between passes
// (their binds the same slices), as a model that shares what did not
// change gives them. Half the passes say which frontends changed
// (model.FrontendChanges), as the pool's view and desired's delta do:
// the memo then looks at those alone (named), with the same result.
func TestListenerMemoRandomEdits(t *testing.T) {
	o := tproxyOpts()
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 29))
			var fs []model.Frontend
			for i := range 40 {
				fs = append(fs, randomListened(r, i))
			}
			n := 1000
			newFront := func() model.Frontend { n++; return randomListened(r, n) }
			var memo ListenerMemo
			var prevListen, prevProxy map[string]string
			named := 0 // passes that said which frontends changed
			var older []model.Frontend
			for pass := range 300 {
				prev := fs
				fs = modeledit.Frontends(r, fs, newFront, func() model.Bind { return randomBind(r) })
				cfg := model.Config{Frontends: fs}
				var fronts *model.FrontendChanges
				switch k := r.IntN(10); {
				case k < 5:
					fronts = &model.FrontendChanges{Base: prev, Of: fs, Names: model.ChangedFrontends(prev, fs)}
					named++
				case k == 5 && older != nil:
					// A stale list: from another pass's frontends, saying
					// nothing changed. Not taken (the walk instead).
					fronts = &model.FrontendChanges{Base: older, Of: fs}
				}
				older = prev
				listen, proxy, le, pe, known := memo.Entries(cfg, fronts, o)
				wl, wp := ListenerEntries(cfg, o)
				if !slices.Equal(listen, wl) || !slices.Equal(proxy, wp) {
					t.Fatalf("pass %d: memo\n%v\n%v\nwhole\n%v\n%v", pass, listen, proxy, wl, wp)
				}
				if pass > 0 && !known {
					t.Fatalf("pass %d: edits unknown for sorted frontends", pass)
				}
				if known {
					checkListenerEdit(t, "listen", prevListen, le, wl)
					checkListenerEdit(t, "proxy", prevProxy, pe, wp)
				}
				prevListen, prevProxy = entryMap(wl), entryMap(wp)
			}
			if named < 100 {
				t.Fatalf("%d of 300 passes said which frontends changed", named)
			}
		})
	}
}

// TestListenerMemoUnsorted: frontends not sorted by name are computed
// whole, and say so.
func TestListenerMemoUnsorted(t *testing.T) {
	o := tproxyOpts()
	r := rand.New(rand.NewPCG(7, 29))
	fs := []model.Frontend{randomListened(r, 2), randomListened(r, 1)}
	var memo ListenerMemo
	for pass := range 3 {
		listen, proxy, _, _, known := memo.Entries(model.Config{Frontends: fs}, nil, o)
		wl, wp := ListenerEntries(model.Config{Frontends: fs}, o)
		if known || !slices.Equal(listen, wl) || !slices.Equal(proxy, wp) {
			t.Fatalf("pass %d: known %v, memo %v %v, whole %v %v", pass, known, listen, proxy, wl, wp)
		}
	}
}

func entryMap(es []MapEntry) map[string]string {
	out := make(map[string]string, len(es))
	for _, e := range es {
		out[e.Key] = e.Value
	}
	return out
}

// checkListenerEdit fails t unless e applied to prev gives want.
func checkListenerEdit(t *testing.T, what string, prev map[string]string, e ListenerEdit, want []MapEntry) {
	t.Helper()
	m := maps.Clone(prev)
	editMap(t, what, m, e.Add, e.Set, e.Del)
	if w := entryMap(want); !maps.Equal(m, w) {
		t.Fatalf("%s: the previous entries edited (%v) are\n%v\nwant\n%v", what, e, m, w)
	}
}

// randomListened is a listened frontend named for i, on one of a few
// addresses and ports, so that keys collide now and then.
func randomListened(r *rand.Rand, i int) model.Frontend {
	return model.Frontend{Name: fmt.Sprintf("svc-%04d", i), Backend: fmt.Sprintf("_pool_%d", r.IntN(50)),
		AcceptProxy: r.IntN(4) == 0, Binds: []model.Bind{randomBind(r)}}
}

func randomBind(r *rand.Rand) model.Bind {
	addrs := []string{"192.0.2.10", "192.0.2.11", "2001:db8::10", "127.0.0.1"}
	return model.Bind{Addr: netip.MustParseAddr(addrs[r.IntN(len(addrs))]), Port: uint16(80 + r.IntN(30)), Transparent: true}
}
