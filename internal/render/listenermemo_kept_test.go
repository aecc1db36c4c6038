package render

import (
	"fmt"
	"net/netip"
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/liveheap"
)

// keptFront is the i-th frontend of the kept-bytes tests: one port of a
// shared address behind the fixed listener.
func keptFront(i int) model.Frontend {
	return model.Frontend{Name: fmt.Sprintf("fe_s%05d", i), Backend: fmt.Sprintf("_pool_%d", i),
		Binds: []model.Bind{{Addr: netip.MustParseAddr("203.0.113.10"), Port: uint16(20000 + i), Transparent: true}}}
}

// keptPasses is a model of n frontends and the models of the passes that
// add the next ones, one at a time, with what each pass changed
// (desired's delta hands the listener memo its FrontendChanges).
func keptPasses(n, added int) ([]model.Config, []*model.FrontendChanges) {
	base := make([]model.Frontend, n)
	for i := range base {
		base[i] = keptFront(2 * i)
	}
	cfgs := []model.Config{{Frontends: base}}
	var fronts []*model.FrontendChanges
	for k := range added {
		last := cfgs[len(cfgs)-1].Frontends
		f := keptFront(2*k*(n/added) + 1)
		at, _ := model.FrontendIndex(last, f.Name)
		next := slices.Insert(slices.Clone(last), at, f)
		cfgs = append(cfgs, model.Config{Frontends: next})
		fronts = append(fronts, &model.FrontendChanges{Base: last, Of: next, Names: []string{f.Name}})
	}
	return cfgs, fronts
}

// BenchmarkListenerMemoKept reports what the listener memo keeps at
// 10,000 frontends after the passes of the first nine new Services
// (issue 29's peak is made by those passes) beyond what it kept after
// the first, whole pass (kept-B/op: live bytes after a collection, every
// pass's model held before and after).
//
//	go test ./internal/render -run '^$' -bench ListenerMemoKept -benchtime 5x
func BenchmarkListenerMemoKept(b *testing.B) {
	const n = 10000
	cfgs, fronts := keptPasses(n, 9)
	o := tproxyOpts()
	var kept int64
	for b.Loop() {
		var m ListenerMemo
		m.Entries(cfgs[0], nil, o)
		kept += liveheap.Growth(func() { newFrontends(b, &m, cfgs, fronts, o) })
		runtime.KeepAlive(&m)
	}
	runtime.KeepAlive(cfgs)
	b.ReportMetric(float64(kept)/float64(b.N), "kept-B/op")
}

// TestListenerMemoKeepsOneArray: the passes of nine new frontends among
// 10,000, each told what changed, keep no second array of records (the
// pass before last's, to build the next in) nor a quarter of room: the
// memo's live heap grows by less than 16 B a frontend (main kept ~82 B a
// frontend: 0.82 MB).
func TestListenerMemoKeepsOneArray(t *testing.T) {
	const n = 10000
	cfgs, fronts := keptPasses(n, 9)
	o := tproxyOpts()
	var m ListenerMemo
	m.Entries(cfgs[0], nil, o)
	kept := liveheap.Growth(func() { newFrontends(t, &m, cfgs, fronts, o) })
	t.Logf("kept %d B after %d new frontends among %d", kept, len(fronts), n)
	if kept > 16*n {
		t.Errorf("the memo kept %d B more after %d new frontends among %d, want at most %d", kept, len(fronts), n, 16*n)
	}
	// And what it gives is still ListenerEntries'.
	listen, proxy, _, _, _ := m.Entries(cfgs[len(cfgs)-1], nil, o)
	wl, wp := ListenerEntries(cfgs[len(cfgs)-1], o)
	if !slices.Equal(listen, wl) || !slices.Equal(proxy, wp) {
		t.Error("entries differ from ListenerEntries")
	}
	runtime.KeepAlive(cfgs)
}

// BenchmarkListenerMemoWholeKept reports what the listener memo keeps
// after its first, whole pass at 10,000 frontends (the first pass of a
// start), the model held before and after (kept-B/op).
//
//	go test ./internal/render -run '^$' -bench ListenerMemoWholeKept -benchtime 5x
func BenchmarkListenerMemoWholeKept(b *testing.B) {
	cfgs, _ := keptPasses(10000, 0)
	o := tproxyOpts()
	var kept int64
	for b.Loop() {
		var m *ListenerMemo
		kept += liveheap.Growth(func() { m = new(ListenerMemo); m.Entries(cfgs[0], nil, o) })
		runtime.KeepAlive(m)
	}
	runtime.KeepAlive(cfgs)
	b.ReportMetric(float64(kept)/float64(b.N), "kept-B/op")
}

// TestListenerMemoWholeKeepsOneCopy: after a whole pass at 10,000
// frontends the memo holds each key's bytes once (the owners' map shares
// the listen entry's) and no slice per owner: under 250 B a frontend
// (main kept ~276 B a frontend: 2.76 MB).
func TestListenerMemoWholeKeepsOneCopy(t *testing.T) {
	const n = 10000
	cfgs, _ := keptPasses(n, 0)
	o := tproxyOpts()
	var m *ListenerMemo
	var listen []MapEntry
	kept := liveheap.Growth(func() { m = new(ListenerMemo); listen, _, _, _, _ = m.Entries(cfgs[0], nil, o) })
	t.Logf("kept %d B for %d frontends", kept, n)
	if kept > 250*n {
		t.Errorf("the memo kept %d B for %d frontends, want at most %d", kept, n, 250*n)
	}
	copies := 0
	for k := range m.owners {
		i, ok := slices.BinarySearchFunc(listen, k, func(e MapEntry, k string) int { return cmpString(e.Key, k) })
		if ok && unsafe.StringData(listen[i].Key) != unsafe.StringData(k) {
			copies++
		}
	}
	if copies > 0 {
		t.Errorf("%d of %d keys held twice (the owners' map and the listen entries)", copies, len(m.owners))
	}
	runtime.KeepAlive(cfgs)
}

// newFrontends is the memo's passes of keptPasses' new frontends, each
// told what changed.
func newFrontends(tb testing.TB, m *ListenerMemo, cfgs []model.Config, fronts []*model.FrontendChanges, o Options) {
	for k, fc := range fronts {
		if _, _, _, _, known := m.Entries(cfgs[k+1], fc, o); !known {
			tb.Fatal("edits unknown")
		}
	}
}
