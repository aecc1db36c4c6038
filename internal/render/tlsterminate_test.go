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
	}{
		{"tls-terminate-routes.cfg", ""},
		{"tls-terminate-routes-maps.cfg", goldenACLDir},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			o := opts
			o.CertDir, o.ACLDir = goldenCertDir, tc.aclDir
			got := Config(cfg, layout, o)
			golden.Assert(t, tc.golden, got)
			fe := string(got[bytes.Index(got, []byte("frontend gw_default_gw_443")):])
			fe = fe[:strings.Index(fe, "\n\n")]
			for _, want := range []string{"ssl crt-list " + goldenCertDir + "/gw_default_gw_443.crtlist", "ssl_fc_sni -i a.example.com", "ssl_fc_sni -i -m end .example.com"} {
				if !strings.Contains(fe, want) {
					t.Errorf("frontend lacks %q:\n%s", want, fe)
				}
			}
			for _, never := range []string{"req.ssl_sni", "inspect-delay", "ssl_hello_type", "alpn"} {
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
			write(CrtListFile(dir, f.Name), CrtListContent(dir, f))
			if tc.aclDir != "" {
				for _, fr := range cfg.Frontends {
					for i, r := range fr.Routes {
						write(RouteMapFile(dir, fr.Name, i), RouteMapContent(r))
					}
				}
				got = bytes.ReplaceAll(got, []byte(goldenACLDir), []byte(dir))
			}
			golden.HAProxyAccepts(t, bytes.ReplaceAll(got, []byte(goldenCertDir), []byte(dir)))
		})
	}
}
