package render

import (
	"bytes"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// An Ingress's backend TLS asks for less than a BackendTLSPolicy
// (internal/ingress/backendtls.go): no verification, no SNI with the
// chain verified, a name checked other than the SNI, HTTP/2 over TLS,
// TLS versions and ciphers.
func TestGoldenIngressBackendTLS(t *testing.T) {
	srv := []model.Server{{Addr: netip.MustParseAddr("127.0.0.1"), Port: 8443}}
	ca := testcert.CA(t, "backend CA").PEM()
	be := func(name string, h2 bool, tls model.BackendTLS) *model.Backend {
		return &model.Backend{Name: name, Balance: "roundrobin", HTTP: true, H2C: h2, Servers: srv, TLS: &tls}
	}
	cfg := model.Config{
		Frontends: []model.Frontend{{Name: "ing_http", Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: 8080}},
			HTTP: model.Shaped(&model.HTTP{Hosts: []model.HTTPHost{{Name: "*", Rules: []model.HTTPRule{{PathType: "PathPrefix", Path: "/", Action: 0}}}},
				Actions: []model.HTTPAction{{Backends: []model.WeightedBackend{{Name: "ing_a_noverify", Weight: 1}}}}})}},
		Backends: []*model.Backend{
			be("ing_a_noverify", false, model.BackendTLS{NoVerify: true}),
			be("ing_b_noverify_sni", false, model.BackendTLS{NoVerify: true, SNI: "b.internal"}),
			be("ing_c_chain", false, model.BackendTLS{CA: "ca_c", CAPEM: ca}),
			be("ing_d_verifyhost", false, model.BackendTLS{CA: "ca_d", CAPEM: ca, VerifyHost: "d.internal"}),
			be("ing_e_grpcs", true, model.BackendTLS{CA: "ca_e", CAPEM: ca, SNI: "e.internal"}),
			be("ing_f_versions", false, model.BackendTLS{NoVerify: true, MinVer: "TLSv1.2", MaxVer: "TLSv1.3",
				Ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256:!aNULL", CipherSuites: "TLS_AES_256_GCM_SHA384"}),
		},
	}
	layout, _ := plan.Assign(cfg, nil, true)
	o := opts
	o.CertDir = goldenCertDir
	got := Config(cfg, layout, o)
	golden.Assert(t, "backendtls-ingress.cfg", got)
	for _, want := range []string{
		"default-server ssl verify none\n",
		"default-server ssl verify none sni str(b.internal)\n",
		"ca-file " + goldenCertDir + "/ca_c.pem\n",
		"ca-file " + goldenCertDir + "/ca_d.pem verifyhost d.internal\n",
		"sni str(e.internal) verifyhost e.internal alpn h2\n",
		"default-server ssl verify none ssl-min-ver TLSv1.2 ssl-max-ver TLSv1.3 ciphers ECDHE-ECDSA-AES128-GCM-SHA256:!aNULL ciphersuites TLS_AES_256_GCM_SHA384\n",
	} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("no %q in the configuration", want)
		}
	}
	dir := t.TempDir()
	for _, b := range cfg.Backends {
		if b.TLS.CA != "" {
			if err := os.WriteFile(CAFile(dir, b.TLS.CA), b.TLS.CAPEM, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	golden.HAProxyAccepts(t, bytes.ReplaceAll(got, []byte(goldenCertDir), []byte(dir)))
	if strings.Contains(string(got), "deny_status 503") {
		t.Error("a valid backend refuses its requests")
	}
}
