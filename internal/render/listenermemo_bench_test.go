package render

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// BenchmarkListenerMemoNewFrontend: the listener memo's pass for one new
// frontend among 10,000 (a new Service behind the fixed listener), told
// which frontend changed (named: the view's model.FrontendChanges) or
// not (walk: every frontend compared with its record, as before new29).
//
//	go test ./internal/render -run '^$' -bench ListenerMemoNewFrontend -count 6
func BenchmarkListenerMemoNewFrontend(b *testing.B) {
	const n = 10000
	o := tproxyOpts()
	vip := netip.MustParseAddr("203.0.113.10")
	front := func(i int) model.Frontend {
		return model.Frontend{Name: fmt.Sprintf("fe_s%05d", i), Backend: fmt.Sprintf("_pool_%d", i),
			Binds: []model.Bind{{Addr: vip, Port: uint16(20000 + i), Transparent: true}}}
	}
	base := make([]model.Frontend, n)
	for i := range base {
		base[i] = front(2 * i) // even numbers: a new one (odd) sorts among them
	}
	for _, named := range []bool{false, true} {
		b.Run(map[bool]string{false: "walk", true: "named"}[named], func(b *testing.B) {
			var m ListenerMemo
			fs := base
			m.Entries(model.Config{Frontends: fs}, nil, o)
			i := 0
			for b.Loop() {
				b.StopTimer()
				// One new frontend, or the last one gone again: the
				// model stays at n or n+1 frontends.
				next := slices.Clone(fs)
				var name string
				if len(fs) == n {
					f := front(2*(i%n) + 1)
					at, _ := model.FrontendIndex(next, f.Name)
					next, name = slices.Insert(next, at, f), f.Name
				} else {
					at, _ := model.FrontendIndex(next, fmt.Sprintf("fe_s%05d", 2*(i%n)+1))
					name = next[at].Name
					next = slices.Delete(next, at, at+1)
					i++
				}
				var fronts *model.FrontendChanges
				if named {
					fronts = &model.FrontendChanges{Base: fs, Of: next, Names: []string{name}}
				}
				b.StartTimer()
				if _, _, _, _, known := m.Entries(model.Config{Frontends: next}, fronts, o); !known {
					b.Fatal("edits unknown")
				}
				fs = next
			}
		})
	}
}
