package render

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// terminatedRoutes is routed's TLS listener in mode Terminate: the same
// routes by server name, on a frontend that terminates TLS with the
// certificates of terminating's HTTPS frontend, without ALPN.
func terminatedRoutes(t *testing.T) model.Config {
	t.Helper()
	cfg := routed()
	tls := *terminating(t).Frontends[0].TLS
	tls.ALPN = nil
	cfg.Frontends[0].TLS = &tls
	return cfg
}

// TestGoldenTLSTerminateRoutes: a TLS Terminate listener's frontend binds
// with its crt-list and routes by the server name of its own handshake
// (ssl_fc_sni), with no inspect delay, with and without route maps; HAProxy
// loads both.
func TestGoldenTLSTerminateRoutes(t *testing.T) {
	cfg := terminatedRoutes(t)
	layout, _ := plan.Assign(cfg, nil, true)
	for _, tc := range []struct {
		golden string
		aclDir string
		want   []string
	}{
		{"tls-terminate-routes.cfg", "", []string{"ssl_fc_sni -i a.example.com", "ssl_fc_sni -i -m end .example.com"}},
		// The routes as map data (tlsroutemaps.go): no server name in the config.
		{"tls-terminate-routes-maps.cfg", goldenACLDir, []string{"ssl_fc_sni,lower", "map_str(" + TLSRouteSNIMapFile(goldenACLDir, "gw_default_gw_443") + ")",
			"map_int(" + TLSRouteBackendsMapFile(goldenACLDir, "gw_default_gw_443") + ")"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			o := opts
			o.CertDir, o.ACLDir = goldenCertDir, tc.aclDir
			got := Config(cfg, layout, o)
			golden.Assert(t, tc.golden, got)
			fe := string(got[bytes.Index(got, []byte("frontend gw_default_gw_443")):])
			fe = fe[:strings.Index(fe, "\n\n")]
			for _, want := range append(tc.want, "ssl crt-list "+goldenCertDir+"/gw_default_gw_443.crtlist") {
				if !strings.Contains(fe, want) {
					t.Errorf("frontend lacks %q:\n%s", want, fe)
				}
			}
			never := []string{"req.ssl_sni", "inspect-delay", "ssl_hello_type", "alpn"}
			if tc.aclDir != "" {
				never = append(never, "example.com", ".r0.map")
			}
			for _, never := range never {
				if strings.Contains(fe, never) {
					t.Errorf("frontend has %q:\n%s", never, fe)
				}
			}

			dir := t.TempDir()
			write := func(p string, b []byte) {
				if err := os.WriteFile(p, b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			f := cfg.Frontends[0]
			write(DefaultCertFile(dir, f.Name), f.TLS.Cert(f.TLS.Default).PEM)
			for _, c := range f.TLS.Certificates {
				write(CertFile(dir, c.Name), c.PEM)
			}
			write(CrtListFile(dir, f.Name), CrtListContent(Options{CertDir: dir}, f))
			if tc.aclDir != "" {
				write(ClientAuthMapFile(dir), nil)
				write(IssuerMapFile(dir), nil)
				for _, fr := range cfg.Frontends {
					for i, r := range fr.Routes {
						write(RouteMapFile(dir, fr.Name, i), RouteMapContent(r))
					}
				}
				write(TLSRouteSNIMapFile(dir, f.Name), MapContent(TLSRouteSNIEntries(f)))
				write(TLSRouteBackendsMapFile(dir, f.Name), MapContent(TLSRouteBackendEntries(f)))
				got = bytes.ReplaceAll(got, []byte(goldenACLDir), []byte(dir))
			}
			golden.HAProxyAccepts(t, bytes.ReplaceAll(got, []byte(goldenCertDir), []byte(dir)))
		})
	}
}

// TestTLSRouteMaps: the server-name map gives each route its id (stable
// whatever other routes come and go), wildcards as "*.suffix", a route
// for any name as model.AnyHost; the backends map cuts each id's range of
// pickRange by the weights.
func TestTLSRouteMaps(t *testing.T) {
	wb := func(ws ...any) []model.WeightedBackend {
		var out []model.WeightedBackend
		for i := 0; i < len(ws); i += 2 {
			out = append(out, model.WeightedBackend{Name: ws[i].(string), Weight: int32(ws[i+1].(int))})
		}
		return out
	}
	f := model.Frontend{Name: "fe", TLS: &model.TLS{}, Routes: []model.Route{
		{SNI: "a.example.com", Backends: wb("be_a", 1)},
		{SNI: "*.example.com", Backends: wb("be_a", 1, "be_b", 3)},
		{SNI: "bad name", Backends: wb("be_a", 1)},
		{SNI: "", Backends: wb("be_b", 1)},
	}}
	ids := RouteIDs(f)
	if len(ids) != 3 || ids[2] != 0 {
		t.Fatalf("ids %v: want three, none for the bad name", ids)
	}
	var sni []string
	for _, e := range TLSRouteSNIEntries(f) {
		sni = append(sni, e.Key)
	}
	if strings.Join(sni, " ") != "a.example.com *.example.com *" {
		t.Fatalf("server names %v", sni)
	}
	id := ids[1]
	var bes []string
	for _, e := range TLSRouteBackendEntries(f) {
		bes = append(bes, e.Key+"="+e.Value)
	}
	lo := id * pickRange
	want := fmt.Sprintf("%d:%d=be_a %d:%d=be_b", lo, lo+pickRange/4-1, lo+pickRange/4, lo+pickRange-1)
	if !strings.Contains(strings.Join(bes, " "), want) {
		t.Fatalf("backends %v lack %s", bes, want)
	}
	// Another route does not move the others' ids.
	g := f
	g.Routes = append([]model.Route{{SNI: "new.example.org", Backends: wb("be_b", 1)}}, f.Routes...)
	if RouteIDs(g)[2] != id || RouteIDs(g)[1] != ids[0] {
		t.Fatalf("ids moved: %v, were %v", RouteIDs(g), ids)
	}
	if !RoutesAsMaps(f, goldenACLDir) || RoutesAsMaps(f, "") || RoutesAsMaps(model.Frontend{Routes: f.Routes}, goldenACLDir) {
		t.Fatal("RoutesAsMaps: only a terminating routed frontend with a map directory")
	}
}
