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

// reencrypting is an HTTP frontend whose backend speaks TLS to its
// servers (a BackendTLSPolicy), beside a backend in clear.
func reencrypting(t *testing.T) model.Config {
	t.Helper()
	srv := []model.Server{{Addr: netip.MustParseAddr("127.0.0.1"), Port: 8443}}
	tlsBe := &model.Backend{Name: "gwh_apps_a_443", Balance: "roundrobin", HTTP: true, Servers: srv,
		TLS: &model.BackendTLS{SNI: "a.example.com", CA: "ca_apps_p", CAPEM: testcert.CA(t, "backend CA").PEM()}}
	clear := &model.Backend{Name: "gwh_apps_b_80", Balance: "roundrobin", HTTP: true, Servers: srv}
	client := testcert.Issue(t, testcert.Spec{CN: "gateway"}, testcert.CA(t, "client CA"))
	bundle, err := certs.Parse(client.PEM(), client.KeyPEM(t), client.Cert.NotBefore)
	if err != nil {
		t.Fatal(err)
	}
	mtls := &model.Backend{Name: "gwhs_apps_c_443_ccert", Balance: "roundrobin", HTTP: true, Servers: srv,
		TLS: &model.BackendTLS{SNI: "c.example.com", CA: "ca_apps_q", CAPEM: tlsBe.TLS.CAPEM, Cert: "ccert_apps_client", CertPEM: bundle.PEM}}
	return model.Config{
		Frontends: []model.Frontend{{Name: "gw_apps_gw_80", Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: 8080}},
			HTTP: model.Shaped(&model.HTTP{Hosts: []model.HTTPHost{{Name: "*", Rules: []model.HTTPRule{{PathType: "PathPrefix", Path: "/", Action: 0}}}},
				Actions: []model.HTTPAction{{Backends: []model.WeightedBackend{{Name: tlsBe.Name, Weight: 1}, {Name: clear.Name, Weight: 1}}}}})}},
		Backends: []*model.Backend{tlsBe, clear, mtls},
	}
}

func TestGoldenBackendTLS(t *testing.T) {
	cfg := reencrypting(t)
	layout, _ := plan.Assign(cfg, nil, true)
	o := opts
	o.CertDir = goldenCertDir
	got := Config(cfg, layout, o)
	golden.Assert(t, "backendtls.cfg", got)

	// HAProxy loads it, with the CA file the driver writes.
	dir := t.TempDir()
	for _, be := range cfg.Backends {
		if be.TLS == nil {
			continue
		}
		if err := os.WriteFile(CAFile(dir, be.TLS.CA), be.TLS.CAPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if be.TLS.Cert != "" {
			if err := os.WriteFile(CertFile(dir, be.TLS.Cert), be.TLS.CertPEM, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	golden.HAProxyAccepts(t, bytes.ReplaceAll(got, []byte(goldenCertDir), []byte(dir)))

	// The CA's contents are no structure; its name and the SNI are.
	other := reencrypting(t)
	if StructureHash(cfg, layout, o) != StructureHash(other, layout, o) {
		t.Error("another CA bundle of the same name changed the structure hash")
	}
	other.Backends[0].TLS.SNI = "b.example.com"
	if StructureHash(cfg, layout, o) == StructureHash(other, layout, o) || cfg.Backends[0].SameStructure(other.Backends[0]) {
		t.Error("another SNI did not change the structure")
	}
}

// Without a certificate directory, or with settings the model refuses,
// the backend refuses every request instead of going in clear.
func TestBackendTLSRefusedWithoutFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  string
		mod  func(*model.BackendTLS)
	}{
		{"no certificate directory", "", func(*model.BackendTLS) {}},
		{"SNI with a space", goldenCertDir, func(b *model.BackendTLS) { b.SNI = "a.example.com verify none" }},
		{"wildcard SNI", goldenCertDir, func(b *model.BackendTLS) { b.SNI = "*.example.com" }},
		{"CA name with a path", goldenCertDir, func(b *model.BackendTLS) { b.CA = "../ca" }},
		{"no CA", goldenCertDir, func(b *model.BackendTLS) { b.CAPEM = nil }},
		{"ciphers with a space", goldenCertDir, func(b *model.BackendTLS) { b.Ciphers = "HIGH verify none" }},
		{"ciphers with a comment", goldenCertDir, func(b *model.BackendTLS) { b.Ciphers = "HIGH#x" }},
		{"a version not TLS", goldenCertDir, func(b *model.BackendTLS) { b.MinVer = "SSLv3" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := reencrypting(t)
			tc.mod(cfg.Backends[0].TLS)
			layout, _ := plan.Assign(cfg, nil, true)
			o := opts
			o.CertDir = tc.dir
			got := string(Config(cfg, layout, o))
			sec := got[strings.Index(got, "backend gwh_apps_a_443"):]
			sec = sec[:strings.Index(sec, "backend gwh_apps_b_80")]
			if strings.Contains(sec, "gwhs_apps_c") {
				t.Fatal("sections out of order")
			}
			if !strings.Contains(sec, "http-request deny deny_status 503") || strings.Contains(sec, " ssl") {
				t.Errorf("backend section:\n%s\nwant a deny and no ssl", sec)
			}
		})
	}
}
