package render

import (
	"bytes"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

const goldenCertDir = "/var/lib/hks/certs"

// terminating is a model with one TLS-terminating frontend of two
// certificates (one with a filter model.ValidSNI refuses) beside a plain
// one.
func terminating(t testing.TB) model.Config {
	t.Helper()
	root := testcert.CA(t, "root")
	bundle := func(names ...string) []byte {
		c := testcert.Issue(t, testcert.Spec{DNS: names}, root)
		b, err := certs.Parse(c.PEM(), c.KeyPEM(t), c.Cert.NotBefore)
		if err != nil {
			t.Fatal(err)
		}
		return b.PEM
	}
	be := &model.Backend{Name: "gw_default_web", Balance: "roundrobin",
		Servers: []model.Server{{Addr: netip.MustParseAddr("127.0.0.1"), Port: 8080}}}
	return model.Config{
		Frontends: []model.Frontend{
			{Name: "gw_default_gw_https", Backend: be.Name, Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: 8443}},
				TLS: &model.TLS{Default: "cert_default_a", ALPN: []string{"h2", "http/1.1"}, Certificates: []model.Certificate{
					{Name: "cert_default_a", SNI: []string{"a.example", "*.a.example"}, PEM: bundle("a.example", "*.a.example")},
					{Name: "cert_default_b", SNI: []string{"b.example", "bad name"}, PEM: bundle("b.example")},
					{Name: "cert_default_c", SNI: []string{"bad name"}, PEM: bundle("c.example")},
				}}},
			{Name: "gw_default_gw_tcp", Backend: be.Name, Binds: []model.Bind{{Port: 9000}}},
		},
		Backends: []*model.Backend{be},
	}
}

func TestGoldenTLS(t *testing.T) {
	cfg := terminating(t)
	layout, _ := plan.Assign(cfg, nil, true)
	o := opts
	o.CertDir = goldenCertDir
	got := Config(cfg, layout, o)
	golden.Assert(t, "tls.cfg", got)
	fe := cfg.Frontends[0]
	golden.Assert(t, "tls.crtlist", CrtListContent(Options{CertDir: goldenCertDir}, fe))

	// HAProxy loads it, with the files the driver writes.
	dir := t.TempDir()
	write := func(p string, b []byte) {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(DefaultCertFile(dir, fe.Name), fe.TLS.Cert(fe.TLS.Default).PEM)
	for _, c := range fe.TLS.Certificates {
		write(CertFile(dir, c.Name), c.PEM)
	}
	write(CrtListFile(dir, fe.Name), CrtListContent(Options{CertDir: dir}, fe))
	golden.HAProxyAccepts(t, bytes.ReplaceAll(got, []byte(goldenCertDir), []byte(dir)))
}

func TestTLSBind(t *testing.T) {
	fe := model.Frontend{Name: "fe", TLS: &model.TLS{ALPN: []string{"h2", "spdy/3", "http/1.1"}}}
	for _, tc := range []struct {
		name string
		f    model.Frontend
		dir  string
		want string
		ok   bool
	}{
		{"plain", model.Frontend{Name: "fe"}, "", "", true},
		{"unknown protocols left out", fe, "/c", " ssl crt-list /c/fe.crtlist alpn h2,http/1.1", true},
		{"no protocol", model.Frontend{Name: "fe", TLS: &model.TLS{}}, "/c", " ssl crt-list /c/fe.crtlist", true},
		{"no directory", fe, "", "", false},
		{"a directory HAProxy would misread", fe, "/c d", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tlsBind(tc.f, Options{CertDir: tc.dir})
			if got != tc.want || ok != tc.ok {
				t.Fatalf("tlsBind = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	// Without a directory the frontend binds nothing rather than plain TCP.
	cfg := model.Config{Frontends: []model.Frontend{{Name: "fe", Backend: "b", Binds: []model.Bind{{Port: 443}}, TLS: &model.TLS{}}}}
	if out := string(Config(cfg, nil, Options{})); strings.Contains(out, "bind") {
		t.Fatalf("a terminating frontend without a certificate directory binds:\n%s", out)
	}
}

// Certificates are data: changing them keeps the structure hash.
func TestTLSCertificatesAreNotStructure(t *testing.T) {
	cfg := terminating(t)
	layout, _ := plan.Assign(cfg, nil, true)
	o := opts
	o.CertDir = goldenCertDir
	h := StructureHash(cfg, layout, o)
	other := cfg
	other.Frontends = append([]model.Frontend(nil), cfg.Frontends...)
	tls := *cfg.Frontends[0].TLS
	tls.Certificates = tls.Certificates[:1]
	tls.Default = tls.Certificates[0].Name
	other.Frontends[0].TLS = &tls
	if StructureHash(other, layout, o) != h {
		t.Fatal("removing a certificate changed the structure")
	}
	tls2 := tls
	tls2.ALPN = []string{"http/1.1"}
	other.Frontends[0].TLS = &tls2
	if StructureHash(other, layout, o) == h {
		t.Fatal("changing ALPN did not change the structure")
	}
}
