package render

import (
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// routed is a Gateway's model: a TCP listener split 80/20 with a share
// refused, and a TLS listener routed by server name (exact names ahead
// of a wildcard).
func routed() model.Config {
	srv := func(a string, port uint16) []model.Server { return []model.Server{{Addr: ap(a), Port: port}} }
	return model.Config{
		Frontends: []model.Frontend{
			{Name: "gw_default_gw_443", Service: "default/gw", Binds: []model.Bind{{Port: 10443}}, Routes: []model.Route{
				{SNI: "a.example.com", Backends: []model.WeightedBackend{{Name: "gw_default_a_443", Weight: 1}}},
				{SNI: "b.example.com", Backends: []model.WeightedBackend{{Name: "gw_default_b_443", Weight: 1}}},
				{SNI: "*.example.com", Backends: []model.WeightedBackend{{Name: "gw_default_a_443", Weight: 1}, {Name: "gw_default_b_443", Weight: 3}}},
			}},
			{Name: "gw_default_gw_8080", Service: "default/gw", Binds: []model.Bind{{Addr: ap("127.0.0.1"), Port: 18080}}, Routes: []model.Route{
				{Backends: []model.WeightedBackend{{Name: "gw_default_a_80", Weight: 80}, {Name: "gw_default_b_80", Weight: 15}, {Name: model.RejectBackend, Weight: 5}}},
			}},
		},
		Backends: []*model.Backend{
			{Name: model.RejectBackend, Balance: "roundrobin", Servers: []model.Server{}},
			{Name: "gw_default_a_443", Service: "default/a", Balance: "roundrobin", Servers: srv("10.244.0.5", 8443)},
			{Name: "gw_default_a_80", Service: "default/a", Balance: "roundrobin", Servers: srv("10.244.0.5", 8080)},
			{Name: "gw_default_b_443", Service: "default/b", Balance: "roundrobin", Servers: srv("10.244.1.7", 8443)},
			{Name: "gw_default_b_80", Service: "default/b", Balance: "roundrobin", Servers: srv("10.244.1.7", 8080)},
		},
	}
}

func TestGoldenRoutes(t *testing.T) {
	cfg := routed()
	layout, _ := plan.Assign(cfg, nil, true)
	got := Config(cfg, layout, opts)
	golden.Assert(t, "routes.cfg", got)
	golden.HAProxyAccepts(t, got)
}

// TestRoutesNeverMatchAll: a server name that is not a valid DNS name
// (what the producer must never hand over) gives no rule at all, rather
// than a rule that would take every connection or carry HAProxy syntax.
func TestRoutesNeverMatchAll(t *testing.T) {
	for _, bad := range []string{"a.example.com }", "A.example.com", "*", "*.", "a..b", "x if TRUE", "a.example.com\n\tuse_backend x", "*.*.example.com"} {
		t.Run(bad, func(t *testing.T) {
			if model.ValidSNI(bad) {
				t.Fatalf("ValidSNI(%q) = true", bad)
			}
			cfg := model.Config{Frontends: []model.Frontend{{Name: "fe", Binds: []model.Bind{{Port: 1}}, Routes: []model.Route{
				{SNI: bad, Backends: []model.WeightedBackend{{Name: "be", Weight: 1}}}}}}}
			out := string(Config(cfg, nil, opts))
			if strings.Contains(out, "use_backend") {
				t.Fatalf("an invalid server name gave a rule:\n%s", out)
			}
		})
	}
}

func TestRouteWeights(t *testing.T) {
	for _, tc := range []struct {
		name    string
		weights []int32
		want    []string
	}{
		{"one", []int32{7}, []string{"use_backend b0"}},
		{"half", []int32{1, 1}, []string{"use_backend b0 if { var(sess.pick) -m int lt 524288 }", "use_backend b1"}},
		{"zero skipped", []int32{0, 80, 20}, []string{"use_backend b1 if { var(sess.pick) -m int lt 838860 }", "use_backend b2"}},
		{"zero last", []int32{80, 20, 0}, []string{"use_backend b0 if { var(sess.pick) -m int lt 838860 }", "use_backend b1"}},
		{"all zero", []int32{0, 0}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := model.Route{}
			for i, w := range tc.weights {
				r.Backends = append(r.Backends, model.WeightedBackend{Name: "b" + string(rune('0'+i)), Weight: w})
			}
			var got []string
			writeRoutes(func(p ...string) {
				if l := strings.TrimSpace(strings.Join(p, " ")); strings.HasPrefix(l, "use_backend") {
					got = append(got, l)
				}
			}, model.Frontend{Routes: []model.Route{r}}, "")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
