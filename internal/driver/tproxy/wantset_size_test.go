package tproxy

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The want set's two arrays (the last pass's and the spare) stay at the
// frontends' size through new Services one at a time, told by name
// (desired's delta) or found by the walk, and after many go: grown by
// slices.Grow they held a quarter more each, kept through the run
// (issue 29's peak).
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
		held, limit := cap(w.fronts)+cap(w.spare), 2*(len(w.fronts)+len(w.fronts)/16+64)
		if held > limit {
			t.Fatalf("%s: the arrays hold %d frontends for %d (at most %d)", step, held, len(w.fronts), limit)
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
	for k := range 2 { // most Services gone: the arrays do not stay at the old size
		fs = slices.Clone(fs[:n/4]) // each pass's own array
		w.update(model.Config{Frontends: fs}, nil, tproxyOpts)
		atSize(fmt.Sprintf("Services gone, pass %d", k))
	}
}
