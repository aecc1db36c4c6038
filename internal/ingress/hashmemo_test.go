package ingress

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// TestHashMemoIngressTables: render's TestHashMemoRandomHTTP on the
// Ingress compiler's tables. Pass after pass of random Ingress edits
// (TestPassMemoIsTheWholeCompile's, a TLS host among them), compiled
// with the memos, the structure hash memo's hash is StructureHash's, and
// some passes whose tables changed took the Shapes' path (no skeleton
// rendered): the Ingress tables carry their Shape as the gateway's do.
func TestHashMemoIngressTables(t *testing.T) {
	o := render.Options{StatsSocket: "/run/hks/admin.sock", ACLDir: "/var/lib/hks/acl", CertDir: "/var/lib/hks/certs"}
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			in := passMemoInput()
			opts := Options{Class: "haproxy", Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.10")}, Last: &Memo{}}
			r := rand.New(rand.NewPCG(30, seed))
			var gone Input
			var m render.HashMemo
			var last []model.Frontend
			cheap, changed := 0, 0
			edits := slices.Concat(memoEdits, passEdits, passEdits)
			for step := range 200 {
				e := edits[r.IntN(len(edits))]
				if step > 0 {
					e.apply(&in, &gone, r)
				}
				res := Compile(in, opts)
				cfg := model.Config{Frontends: res.Frontends, Backends: res.Backends}
				layout, _ := plan.Assign(cfg, nil, true)
				before := m.Renders()
				got := m.StructureHash(cfg, layout, o)
				if want := render.StructureHash(cfg, layout, o); got != want {
					t.Fatalf("step %d (%s): memo's hash %s, StructureHash %s", step, e.name, got, want)
				}
				if tablesChanged(last, res.Frontends) {
					changed++
					if m.Renders() == before {
						cheap++
					}
				}
				last = res.Frontends
			}
			if cheap == 0 {
				t.Errorf("none of %d passes with a changed table compared it by its Shape", changed)
			}
			t.Logf("%d of %d passes with a changed table compared by their Shapes, %d skeletons rendered", cheap, changed, m.Renders())
		})
	}
}

// tablesChanged reports whether a frontend of b has another table than
// a's of its name (or is new).
func tablesChanged(a, b []model.Frontend) bool {
	for _, f := range b {
		i := slices.IndexFunc(a, func(g model.Frontend) bool { return g.Name == f.Name })
		if i < 0 || !a[i].HTTP.Equal(f.HTTP) {
			return true
		}
	}
	return false
}

// passMemoInput is TestPassMemoIsTheWholeCompile's world: 40 Ingresses,
// hosts shared, a default backend, a TLS host, three ConfigMaps of
// custom headers.
func passMemoInput() Input {
	in := benchInput(40)
	for i, ing := range in.Ingresses {
		in.Ingresses[i] = newVersion(ing, func(c *netv1.Ingress) {
			c.ResourceVersion = "1"
			c.Spec.Rules[0].Host = fmt.Sprintf("h%d.example.com", i%12) // hosts shared
			if i == 7 {
				c.Spec.DefaultBackend = c.Spec.Rules[0].HTTP.Paths[0].Backend.DeepCopy()
			}
			if i == 9 {
				c.Spec.TLS = []netv1.IngressTLS{{Hosts: []string{c.Spec.Rules[0].Host}}}
			}
		})
	}
	in.ConfigMaps = headerConfigMaps(3)
	return in
}
