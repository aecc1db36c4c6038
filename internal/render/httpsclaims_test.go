package render

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestHTTPSListenedFirstCome: the fixed HTTPS listener's claims from pass
// to pass (HTTPSHolds, as tproxy.Ordered keeps them): a listener that
// holds a name keeps it against a newcomer that sorts before it, a
// holder that takes another holder's name loses its own hold, a released
// name goes to the next, and the same model again changes nothing.
func TestHTTPSListenedFirstCome(t *testing.T) {
	o := httpsListenerOpts()
	gw := func(name, addr string, certs ...string) model.Frontend {
		return gatewayHTTPS(name, addr, 443, "be", []string{"h.example.com"}, certs...)
	}
	b := gw("gw_b", "203.0.113.10", "cert_a=a.example.com")                    // the holder
	a := gw("gw_a", "203.0.113.11", "cert_x=a.example.com")                    // the same name, another certificate, sorting first
	wild := gw("gw_a", "203.0.113.11", "cert_x=*.example.com")                 // a wildcard over it
	shared := gw("gw_a", "203.0.113.11", "cert_a=a.example.com")               // the same Secret
	x := gw("gw_a", "203.0.113.11", "cert_x=x.example.com")                    // its own name
	xTakes := gw("gw_a", "203.0.113.11", "cert_x=x.example.com,a.example.com") // then b's too
	c := gw("gw_c", "203.0.113.12", "cert_c=a.example.com")                    // a third, sorting after
	bRotated := gw("gw_b", "203.0.113.10", "cert_a2=a.example.com")            // b's name, another Secret
	type pass struct {
		fronts []model.Frontend
		want   []string
	}
	for _, tc := range []struct {
		name   string
		passes []pass
	}{
		{"a newcomer sorting before keeps its own frontend", []pass{
			{[]model.Frontend{b}, []string{"gw_b"}},
			{[]model.Frontend{a, b}, []string{"gw_b"}},
			{[]model.Frontend{a, b}, []string{"gw_b"}},
		}},
		{"a wildcard newcomer too", []pass{
			{[]model.Frontend{b}, []string{"gw_b"}},
			{[]model.Frontend{wild, b}, []string{"gw_b"}},
		}},
		{"both new: name order", []pass{
			{[]model.Frontend{a, b}, []string{"gw_a"}},
			{[]model.Frontend{a, b}, []string{"gw_a"}},
		}},
		{"a released name is taken by the next", []pass{
			{[]model.Frontend{b}, []string{"gw_b"}},
			{[]model.Frontend{a, b, c}, []string{"gw_b"}},
			{[]model.Frontend{a, c}, []string{"gw_a"}},
			{[]model.Frontend{a, b, c}, []string{"gw_a"}},
		}},
		{"one Secret shares", []pass{
			{[]model.Frontend{b}, []string{"gw_b"}},
			{[]model.Frontend{shared, b}, []string{"gw_a", "gw_b"}},
		}},
		{"a holder taking another's name loses its hold", []pass{
			{[]model.Frontend{x, b}, []string{"gw_a", "gw_b"}},
			{[]model.Frontend{xTakes, b}, []string{"gw_b"}},
			{[]model.Frontend{x, b}, []string{"gw_a", "gw_b"}},
		}},
		{"a holder's new Secret keeps its name", []pass{
			{[]model.Frontend{b}, []string{"gw_b"}},
			{[]model.Frontend{a, bRotated}, []string{"gw_b"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			holds := NewHTTPSHolds(RunningHTTPS{})
			for i, p := range tc.passes {
				cfg := holds.Hold(model.Config{Frontends: p.fronts})
				if got := slices.Sorted(maps.Keys(o.HTTPSListened(cfg))); !slices.Equal(got, p.want) {
					t.Errorf("pass %d: HTTPSListened = %v, want %v (held %v)", i+1, got, p.want, cfg.HTTPSHeld)
				}
				// Carried (ClaimHTTPS, as tproxy.Ordered hands it on): the
				// same claims, view and held names.
				claimed := o.ClaimHTTPS(cfg)
				if got := slices.Sorted(maps.Keys(o.HTTPSListened(claimed))); !slices.Equal(got, p.want) {
					t.Errorf("pass %d: carried claims %v, want %v", i+1, got, p.want)
				}
				if v, w := HTTPSListenerView(claimed, o).Frontends, HTTPSListenerView(cfg, o).Frontends; !reflect.DeepEqual(v, w) {
					t.Errorf("pass %d: the listener's view of the carried claims differs:\n%+v\nwant\n%+v", i+1, v, w)
				}
				if h, w := HTTPSHeldOf(claimed, o), HTTPSHeldOf(cfg, o); !slices.Equal(h, w) {
					t.Errorf("pass %d: held names %v of the carried claims, want %v", i+1, h, w)
				}
				holds.Took(claimed, o)
			}
		})
	}
}

// TestHTTPSListenedRestart: after a restart the claims start from the
// running listener's files (RunningHTTPSOf of the map and crt-list that
// HTTPSListenerEntries and HTTPSListenerFront wrote), so the listener
// serves what it served; with nothing known, name order. The same files
// give the same claims, and the next pass keeps them.
func TestHTTPSListenedRestart(t *testing.T) {
	o := httpsListenerOpts()
	b := gatewayHTTPS("gw_b", "203.0.113.10", 443, "be", []string{"a.example.com"}, "cert_a=a.example.com,*.a.example.com")
	a := gatewayHTTPS("gw_a", "203.0.113.11", 443, "be", []string{"a.example.com"}, "cert_x=a.example.com")
	d := gatewayHTTPS("gw_d", "203.0.113.12", 443, "be", []string{"d.example.com"}, "cert_d=d.example.com")
	holds := NewHTTPSHolds(RunningHTTPS{})
	for _, fronts := range [][]model.Frontend{{b, d}, {a, b, d}} {
		holds.Took(holds.Hold(model.Config{Frontends: fronts}), o)
	}
	before := holds.Hold(model.Config{Frontends: []model.Frontend{a, b, d}})
	fixed, in, ok := HTTPSListenerFront(before, o)
	if !ok || !in["gw_b"] || !in["gw_d"] || in["gw_a"] {
		t.Fatalf("before the restart: listened %v", in)
	}
	running := RunningHTTPSOf(o.CertDir, MapContent(HTTPSListenerEntries(before, o)), CrtListContent(o, fixed))
	if !slices.Equal(running.Fronts, []string{"gw_b", "gw_d"}) || len(running.Served) != 3 {
		t.Fatalf("RunningHTTPSOf = %+v", running)
	}
	for _, tc := range []struct {
		name    string
		running RunningHTTPS
		want    []string
	}{
		{"from the running files", running, []string{"gw_b", "gw_d"}},
		{"nothing known: name order", RunningHTTPS{}, []string{"gw_a", "gw_d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 { // twice from the same files: the same claims
				h := NewHTTPSHolds(tc.running)
				cfg := h.Hold(model.Config{Frontends: []model.Frontend{a, b, d}})
				if got := slices.Sorted(maps.Keys(o.HTTPSListened(cfg))); !slices.Equal(got, tc.want) {
					t.Errorf("HTTPSListened = %v, want %v (held %v)", got, tc.want, cfg.HTTPSHeld)
				}
				h.Took(cfg, o)
				if got := slices.Sorted(maps.Keys(o.HTTPSListened(h.Hold(cfg)))); !slices.Equal(got, tc.want) {
					t.Errorf("next pass: HTTPSListened = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// TestRunningHTTPSOf: the listener's map and crt-list read back: the
// map's frontends; the crt-list's names by certificate, the default line,
// options, negative filters and what is no certificate of the directory
// or no valid name left out.
func TestRunningHTTPSOf(t *testing.T) {
	dir := goldenCertDir
	m := "203.0.113.10:443 gw_b\n203.0.113.11:443 gw_a\n[2001:db8::1]:443 gw_b\n"
	list := DefaultCertFile(dir, HTTPSListenerFrontend) + " !*\n" +
		CertFile(dir, "cert_b") + " [verify none alpn h2] b.example.com *.b.example.com !x.b.example.com\n" +
		CertFile(dir, "cert_a") + " a.example.com\n" +
		"/elsewhere/cert_c.pem c.example.com\n" +
		CertFile(dir, "cert_d") + " bad_name\n" +
		CertFile(dir, "cert_a") + " a.example.com\n"
	got := RunningHTTPSOf(dir, []byte(m), []byte(list))
	want := []ServedName{{"*.b.example.com", "cert_b"}, {"a.example.com", "cert_a"}, {"b.example.com", "cert_b"}}
	if !slices.Equal(got.Fronts, []string{"gw_a", "gw_b"}) || !slices.Equal(got.Served, want) {
		t.Errorf("RunningHTTPSOf = %+v, want fronts [gw_a gw_b], served %v", got, want)
	}
}
