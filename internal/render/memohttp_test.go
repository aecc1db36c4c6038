package render

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// shaped is h with its Shape, as every producer sets it.
func shaped(h *model.HTTP) *model.HTTP { return model.Shaped(h) }

// TestHashMemoHTTPShape: two HTTP tables that both carry a Shape are
// compared by it (issue 30): a new route, a path, a weight or the port
// changed is no structure and renders no skeleton (the memo's renders
// count stays), while a header set matched, a header name changed or
// access on is seen as a new structure. Each hash is StructureHash's.
func TestHashMemoHTTPShape(t *testing.T) {
	o := opts
	o.ACLDir = goldenACLDir
	for _, tc := range []struct {
		name    string
		change  func(h *model.HTTP)
		same    bool // the same structure hash
		renders int  // skeletons the memo renders for the changed table
	}{
		{name: "a route added", change: func(h *model.HTTP) {
			h.Hosts = append(h.Hosts, model.HTTPHost{Name: "new.example.com", Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 0}}})
		}, same: true},
		{name: "a path changed", change: func(h *model.HTTP) { h.Hosts[0].Rules[0].Path = "/other" }, same: true},
		{name: "a weight changed", change: func(h *model.HTTP) { h.Actions[2].Backends[0].Weight = 1 }, same: true},
		{name: "the port changed", change: func(h *model.HTTP) { h.Port = 9090 }, same: true},
		{name: "a header set added", change: func(h *model.HTTP) {
			h.Hosts = append(h.Hosts, model.HTTPHost{Name: "new.example.com", Rules: []model.HTTPRule{
				{PathType: model.PathPrefix, Path: "/", Headers: []model.HeaderMatch{{Name: "x-new", Value: "1"}}, Action: 0}}})
		}, renders: 1},
		{name: "a method matched", change: func(h *model.HTTP) { h.Hosts[0].Rules[0].Method = "GET" }, renders: 1},
		{name: "a header name set", change: func(h *model.HTTP) { h.Actions[1].Set[0].Name = "x-other" }, renders: 1},
		{name: "access on", change: func(h *model.HTTP) { h.Actions[0].Access = &model.HTTPAccess{} }, renders: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := httpRouted()
			shaped(base.Frontends[0].HTTP)
			layout, _ := plan.Assign(base, nil, true)
			var m HashMemo
			h0 := m.StructureHash(base, layout, o)
			next := httpRouted() // new slices: the compiler's next table
			tc.change(next.Frontends[0].HTTP)
			shaped(next.Frontends[0].HTTP)
			before := m.renders
			h1 := m.StructureHash(next, layout, o)
			if want := StructureHash(next, layout, o); h1 != want {
				t.Fatalf("memo's hash %s, StructureHash %s", h1, want)
			}
			if (h1 == h0) != tc.same {
				t.Errorf("same structure: %v, want %v", h1 == h0, tc.same)
			}
			if got := m.renders - before; got != tc.renders {
				t.Errorf("%d skeletons rendered, want %d", got, tc.renders)
			}
		})
	}
}

// TestHashMemoRandomHTTP: pass after pass of random edits of an HTTP
// table (routes added and removed, header sets, header names set,
// access, a Passthrough, the port, TLS on and off), each pass a new
// table with its Shape (as every producer sets it), the memo's hash is
// StructureHash's; and some passes that changed the table took the
// Shapes' path (no skeleton rendered).
func TestHashMemoRandomHTTP(t *testing.T) {
	o := opts
	o.ACLDir, o.CertDir = goldenACLDir, goldenCertDir
	tls := terminating(t).Frontends[0].TLS
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 30))
			cfg := httpRouted()
			var m HashMemo
			cheap := 0
			pick := func(s []string) string { return s[r.IntN(len(s))] }
			for pass := range 300 {
				f := cfg.Frontends[0]
				old := f.HTTP
				h := &model.HTTP{Hosts: slices.Clone(old.Hosts), Actions: slices.Clone(old.Actions), Port: old.Port,
					Listeners: old.Listeners, Passthrough: old.Passthrough}
				switch k := r.IntN(8); {
				case k <= 1 || len(h.Hosts) < 2:
					rule := model.HTTPRule{PathType: model.PathPrefix, Path: "/", Action: len(h.Actions), Method: pick([]string{"", "", "GET"})}
					if n := pick([]string{"", "", "version", "x-a"}); n != "" {
						rule.Headers = []model.HeaderMatch{{Name: n, Value: "1"}}
					}
					h.Hosts = append(h.Hosts, model.HTTPHost{Name: fmt.Sprintf("h%d.example.com", pass), Rules: []model.HTTPRule{rule}})
					a := model.HTTPAction{Backends: []model.WeightedBackend{{Name: "gwh_default_a_80", Weight: 1}}}
					if n := pick([]string{"", "", "x-set", "x-b"}); n != "" {
						a.Set = []model.HeaderValue{{Name: n, Value: "v"}}
					}
					h.Actions = append(h.Actions, a)
				case k == 2:
					i := r.IntN(len(h.Hosts))
					h.Hosts = slices.Delete(h.Hosts, i, i+1)
				case k == 3:
					i := r.IntN(len(h.Actions))
					if h.Actions[i].Access == nil {
						h.Actions[i].Access = &model.HTTPAccess{}
					} else {
						h.Actions[i].Access = nil
					}
				case k == 4:
					if h.Passthrough == nil {
						h.Passthrough = &model.Passthrough{Routes: []model.PassRoute{{SNI: "p.example", Backend: "gwh_default_a_80"}}}
					} else {
						h.Passthrough = nil
					}
				case k == 5:
					h.Port = uint16(8080 + r.IntN(3))
				case k == 6:
					f.TLS = []*model.TLS{nil, tls}[r.IntN(2)]
				}
				shaped(h)
				f.HTTP = h
				cfg.Frontends = []model.Frontend{f}
				layout, _ := plan.Assign(cfg, nil, true)
				before := m.renders
				got := m.StructureHash(cfg, layout, o)
				if want := StructureHash(cfg, layout, o); got != want {
					t.Fatalf("pass %d: memo's hash %s, StructureHash %s", pass, got, want)
				}
				if m.renders == before && !old.Equal(h) {
					cheap++
				}
			}
			if cheap == 0 {
				t.Error("no changed table was compared by its Shape")
			}
			t.Logf("%d changed tables compared by their Shapes, %d skeletons rendered", cheap, m.renders)
		})
	}
}

// BenchmarkHashMemoHTTPRouteNew: the structure hash of a pass that adds
// a route in the middle of a table of n routes, then takes it away, in
// turn (the other hosts' slices shared, each table with its Shape kept,
// as the gateway's table memo hands them): the memo compares the two
// tables' Shapes, not their routes, and renders no skeleton (issue 30).
// go test ./internal/render -run '^$' -bench BenchmarkHashMemoHTTPRouteNew -benchmem
func BenchmarkHashMemoHTTPRouteNew(b *testing.B) {
	o := opts
	o.ACLDir = goldenACLDir
	for _, n := range []int{1000, 5000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			h := &model.HTTP{Port: 80}
			for i := range n {
				h.Hosts = append(h.Hosts, model.HTTPHost{Name: fmt.Sprintf("r%d.example.com", i), Rules: []model.HTTPRule{
					{PathType: model.PathExact, Path: fmt.Sprint("/p", i), Action: 2 * i},
					{PathType: model.PathPrefix, Path: "/", Headers: []model.HeaderMatch{{Name: "version", Value: "2"}}, Action: 2*i + 1},
				}})
				h.Actions = append(h.Actions, model.HTTPAction{Backends: []model.WeightedBackend{{Name: "gwh_default_a_80", Weight: 1}}},
					model.HTTPAction{Backends: []model.WeightedBackend{{Name: "gwh_default_b_80", Weight: 1}}})
			}
			nh := &model.HTTP{Port: h.Port, Actions: append(slices.Clone(h.Actions), model.HTTPAction{})}
			nh.Hosts = append(slices.Clone(h.Hosts[:n/2]), model.HTTPHost{Name: "new.example.com",
				Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: len(nh.Actions) - 1}}})
			nh.Hosts = append(nh.Hosts, h.Hosts[n/2:]...)
			var cfgs [2]model.Config
			for i, t := range []*model.HTTP{shaped(h), shaped(nh)} {
				cfgs[i] = httpRouted()
				cfgs[i].Frontends[0].HTTP = t
			}
			layout, _ := plan.Assign(cfgs[0], nil, true)
			var m HashMemo
			i := 0
			for b.Loop() {
				i++
				m.StructureHash(cfgs[i%2], layout, o)
			}
			b.ReportMetric(float64(m.renders)/float64(i), "renders/op")
		})
	}
}
