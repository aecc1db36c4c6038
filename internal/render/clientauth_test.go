package render

import (
	"os"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// clientAuthConfig: the terminating frontend verifies its clients
// (required, tls), and a copy of it on another port lets them through
// (optional, optTLS); ca is the client CA.
func clientAuthConfig(t *testing.T) (cfg model.Config, tls, optTLS *model.TLS, ca []byte) {
	t.Helper()
	cfg = terminating(t)
	ca = testcert.CA(t, "client CA").PEM()
	req := *cfg.Frontends[0].TLS
	req.Client = &model.ClientAuth{CA: "cca_0123456789abcdef", CAPEM: ca}
	cfg.Frontends[0].TLS = &req
	opt := cfg.Frontends[0]
	opt.Name, opt.Binds = "gw_default_gw_8443", []model.Bind{{Port: 9443}}
	o := req
	o.Client = &model.ClientAuth{CA: "cca_0123456789abcdef", CAPEM: ca, Optional: true}
	opt.TLS = &o
	cfg.Frontends = append(cfg.Frontends, opt)
	return cfg, &req, &o, ca
}

// The terminating frontend verifies its clients (required), and a copy
// of it on another port lets them through (optional).
func TestGoldenClientAuth(t *testing.T) {
	cfg, tls, optTLS, ca := clientAuthConfig(t)
	layout, _ := plan.Assign(cfg, nil, true)
	o := opts
	o.CertDir = goldenCertDir
	golden.Assert(t, "clientauth.cfg", Config(cfg, layout, o))

	// HAProxy loads it, with the files the driver writes.
	dir := t.TempDir()
	writeTLSFiles(t, cfg, Options{CertDir: dir}, map[string][]byte{CAFile(dir, tls.Client.CA): ca})
	o.CertDir = dir
	golden.HAProxyAccepts(t, Config(cfg, layout, o))

	// Whether and how clients are verified is structure (the bind line).
	h := StructureHash(cfg, layout, o)
	optTLS.Client = &model.ClientAuth{CA: "cca_0123456789abcdef", CAPEM: ca}
	if StructureHash(cfg, layout, o) == h {
		t.Error("optional to required kept the structure")
	}
}

func TestClientAuthBind(t *testing.T) {
	ca := []byte("PEM")
	for _, tc := range []struct {
		name string
		t    *model.TLS
		dir  string
		want string
		ok   bool
	}{
		{"none", &model.TLS{}, "/c", "", true},
		{"required", &model.TLS{Client: &model.ClientAuth{CA: "cca_1", CAPEM: ca}}, "/c", " verify required ca-file /c/cca_1.pem no-ca-names", true},
		{"optional", &model.TLS{Client: &model.ClientAuth{CA: "cca_1", CAPEM: ca, Optional: true}}, "/c",
			" verify optional ca-file /c/cca_1.pem no-ca-names ca-ignore-err all crt-ignore-err all", true},
		{"a name with syntax", &model.TLS{Client: &model.ClientAuth{CA: "x verify none", CAPEM: ca}}, "/c", "", false},
		{"no bundle", &model.TLS{Client: &model.ClientAuth{CA: "cca_1"}}, "/c", "", false},
		{"no directory", &model.TLS{Client: &model.ClientAuth{CA: "cca_1", CAPEM: ca}}, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := clientAuthBind(tc.t, Options{CertDir: tc.dir})
			if got != tc.want || ok != tc.ok {
				t.Fatalf("clientAuthBind = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
			// A frontend whose verification cannot be written binds nothing.
			args, ok := tlsBind(model.Frontend{Name: "fe", TLS: tc.t}, Options{CertDir: "/c"})
			if tc.dir != "" && !tc.ok && (ok || args != "") {
				t.Fatalf("tlsBind = %q, %v for settings the model refuses", args, ok)
			}
		})
	}
}

// writeTLSFiles writes the files the driver writes for cfg's terminating
// frontends under opts.CertDir (certificates, crt-lists) and more.
func writeTLSFiles(t testing.TB, cfg model.Config, opts Options, more map[string][]byte) {
	t.Helper()
	files := map[string][]byte{}
	for p, b := range more {
		files[p] = b
	}
	if _, given := files[IssuerMapFile(opts.ACLDir)]; opts.ACLDir != "" && !given {
		files[IssuerMapFile(opts.ACLDir)] = nil // the host rules' (hostauth.go)
	}
	dir := opts.CertDir
	for _, fe := range cfg.Frontends {
		if fe.TLS == nil {
			continue
		}
		files[DefaultCertFile(dir, fe.Name)] = fe.TLS.Cert(fe.TLS.Default).PEM
		for _, c := range fe.TLS.Certificates {
			files[CertFile(dir, c.Name)] = c.PEM
		}
		files[CrtListFile(dir, fe.Name)] = CrtListContent(opts, fe)
	}
	for p, b := range files {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
