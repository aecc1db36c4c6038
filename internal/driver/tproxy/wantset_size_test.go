package tproxy

import (
	"fmt"
	"maps"
	"net/netip"
	"runtime"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/liveheap"
)

// The want set keeps one array, at the frontends' size, through new
// Services one at a time, told by name (desired's delta: edited in
// place) or found by the walk, and after many go: grown by slices.Grow
// it held a quarter more, and the pass before last's array was kept
// beside it (issue 29's peak). What it wants is what a whole take of the
// same frontends wants.
func TestWantSetArraysAtSize(t *testing.T) {
	const n = 10000
	front := func(i int) model.Frontend {
		return model.Frontend{Name: fmt.Sprintf("fe-%05d", i), Backend: fmt.Sprintf("be-%05d", i),
			Binds: []model.Bind{{Addr: netip.MustParseAddr("203.0.113.10"), Port: uint16(1024 + i), Transparent: true}}}
	}
	var fs []model.Frontend
	for i := range n {
		fs = append(fs, front(i))
	}
	var w wantSet
	w.update(model.Config{Frontends: fs}, nil, tproxyOpts)
	atSize := func(step string) {
		t.Helper()
		held, limit := cap(w.fronts), len(w.fronts)+len(w.fronts)/16+64
		if held > limit {
			t.Fatalf("%s: the array holds %d frontends for %d (at most %d)", step, held, len(w.fronts), limit)
		}
		var whole wantSet
		whole.update(model.Config{Frontends: fs}, nil, tproxyOpts)
		if !maps.Equal(w.count, whole.count) || !slices.EqualFunc(w.fronts, whole.fronts, func(a, b wantFront) bool { return a.name == b.name }) {
			t.Fatalf("%s: wants %d elements of %d frontends, a whole take %d of %d", step, len(w.count), len(w.fronts), len(whole.count), len(whole.fronts))
		}
	}
	for k := range 200 {
		prev := fs
		fs = append(fs[:len(fs):len(fs)], front(n+k)) // a new array: the last pass's is the driver's
		cfg := model.Config{Frontends: fs}
		var changes *model.FrontendChanges
		if k%2 == 0 {
			changes = &model.FrontendChanges{Base: prev, Of: fs, Names: []string{front(n + k).Name}}
		}
		w.update(cfg, changes, tproxyOpts)
		if len(w.fronts) != len(fs) {
			t.Fatalf("new Service %d: %d frontends taken, want %d", k, len(w.fronts), len(fs))
		}
		atSize(fmt.Sprintf("new Service %d", k))
	}
	// What the set keeps is one whole take's: no second array beside it.
	var whole wantSet
	one := liveheap.Growth(func() { whole.update(model.Config{Frontends: fs}, nil, tproxyOpts) })
	runtime.KeepAlive(whole)
	if held := -liveheap.Growth(func() { w = wantSet{} }); held > one+one/8 {
		t.Fatalf("the set keeps %d B for %d frontends, a whole take %d B", held, len(fs), one)
	}
	w.update(model.Config{Frontends: fs}, nil, tproxyOpts)
	for k := range 2 { // most Services gone: the arrays do not stay at the old size
		fs = slices.Clone(fs[:n/4]) // each pass's own array
		w.update(model.Config{Frontends: fs}, nil, tproxyOpts)
		atSize(fmt.Sprintf("Services gone, pass %d", k))
	}
}
