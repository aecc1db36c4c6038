package render

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

func TestGoldenRouteMaps(t *testing.T) {
	cfg := routed()
	layout, _ := plan.Assign(cfg, nil, true)
	withDir := opts
	withDir.ACLDir = goldenACLDir
	got := Config(cfg, layout, withDir)
	golden.Assert(t, "routes-maps.cfg", got)
	var maps bytes.Buffer
	dir := t.TempDir()
	for _, f := range cfg.Frontends {
		for i, r := range f.Routes {
			if err := os.WriteFile(RouteMapFile(dir, f.Name, i), RouteMapContent(r), 0o644); err != nil {
				t.Fatal(err)
			}
			maps.WriteString("# " + RouteMapFile(goldenACLDir, f.Name, i) + "\n")
			maps.Write(RouteMapContent(r))
		}
	}
	golden.Assert(t, "routes-maps.txt", maps.Bytes())
	golden.HAProxyAccepts(t, bytes.ReplaceAll(got, []byte(goldenACLDir), []byte(dir)))
}

func TestRouteMapEntries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		weights []int32
		want    string
	}{
		{"one", []int32{7}, "0:1048575 b0"},
		{"half", []int32{1, 1}, "0:524287 b0,524288:1048575 b1"},
		{"as the inline rules cut", []int32{0, 80, 20}, "0:838859 b1,838860:1048575 b2"},
		{"a share too small for one number", []int32{1, 1 << 30}, "0:1048575 b1"},
		{"all zero", []int32{0, 0}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := model.Route{}
			for i, w := range tc.weights {
				r.Backends = append(r.Backends, model.WeightedBackend{Name: "b" + string(rune('0'+i)), Weight: w})
			}
			var got []string
			for _, e := range RouteMapEntries(r) {
				got = append(got, e.Key+" "+e.Backend)
			}
			if g := strings.Join(got, ","); g != tc.want {
				t.Fatalf("got %s, want %s", g, tc.want)
			}
		})
	}
}

// With route maps, the weights and the backends a route picks among
// those of the config are not structure: changing them needs no reload.
func TestRouteMapsStructure(t *testing.T) {
	withDir := opts
	withDir.ACLDir = goldenACLDir
	base := routed()
	hash := func(o Options, cfg model.Config) string {
		layout, _ := plan.Assign(cfg, nil, true)
		return StructureHash(cfg, layout, o)
	}
	weights := routed()
	weights.Frontends[1].Routes[0].Backends[0].Weight = 10
	moved := routed()
	moved.Frontends[0].Routes[0].Backends[0].Name = "gw_default_b_443"
	added := routed()
	added.Frontends[0].Routes = append([]model.Route{{SNI: "c.example.com", Backends: []model.WeightedBackend{{Name: "gw_default_a_443", Weight: 1}}}}, added.Frontends[0].Routes...)
	for _, tc := range []struct {
		name  string
		o     Options
		cfg   model.Config
		equal bool
	}{
		{"maps: weights are no structure", withDir, weights, true},
		{"maps: another backend of the config is no structure", withDir, moved, true},
		{"maps: a route more is structure", withDir, added, false},
		{"inline: weights are structure", opts, weights, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hash(tc.o, tc.cfg) == hash(tc.o, base); got != tc.equal {
				t.Fatalf("same structure: got %v, want %v", got, tc.equal)
			}
		})
	}
}
