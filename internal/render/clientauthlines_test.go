package render

import (
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// With an ACL directory, AllowValidOnly is written on the crt-list lines
// and the map, not on the bind: turning it on or off keeps the
// structure; the fallback keeps the bind's ignore lists (a reload).
func TestGoldenClientAuthOnLines(t *testing.T) {
	cfg, tls, _, ca := clientAuthConfig(t) // clientauth_test.go
	layout, _ := plan.Assign(cfg, nil, true)
	o := opts
	o.CertDir, o.ACLDir = goldenCertDir, goldenACLDir
	golden.Assert(t, "clientauth_lines.cfg", Config(cfg, layout, o))
	golden.Assert(t, "clientauth_lines.crtlist", CrtListContent(o, cfg.Frontends[0]))

	// HAProxy loads it, with the files the driver writes.
	dir := t.TempDir()
	o.CertDir, o.ACLDir = dir, dir
	writeTLSFiles(t, cfg, o, map[string][]byte{CAFile(dir, tls.Client.CA): ca, ClientAuthMapFile(dir): []byte(cfg.Frontends[0].Name + " required\n")})
	golden.HAProxyAccepts(t, Config(cfg, layout, o))

	h := StructureHash(cfg, layout, o)
	for _, step := range []struct {
		name   string
		client *model.ClientAuth
		same   bool
	}{
		{"required off", nil, true},
		{"required with another CA file", &model.ClientAuth{CA: "cca_other", CAPEM: ca}, true},
		{"required to optional", &model.ClientAuth{CA: "cca_0123456789abcdef", CAPEM: ca, Optional: true}, false},
	} {
		tls.Client = step.client
		if got := StructureHash(cfg, layout, o) == h; got != step.same {
			t.Errorf("%s: structure kept %v, want %v", step.name, got, step.same)
		}
	}
}

func TestCrtListEntriesVerify(t *testing.T) {
	ca := []byte("PEM")
	certs := []model.Certificate{{Name: "cert_a", SNI: []string{"a.example"}}, {Name: "cert_b"}}
	for _, tc := range []struct {
		name   string
		client *model.ClientAuth
		acl    string
		want   []string
	}{
		{"none", nil, "/m", []string{"/c/fe.default.pem !*", "/c/cert_a.pem a.example", "/c/cert_b.pem"}},
		{"required", &model.ClientAuth{CA: "cca_1", CAPEM: ca}, "/m",
			[]string{"/c/fe.default.pem !*", "/c/cert_a.pem [verify required no-ca-names ca-file /c/cca_1.pem] a.example", "/c/cert_b.pem [verify required no-ca-names ca-file /c/cca_1.pem]"}},
		{"optional", &model.ClientAuth{CA: "cca_1", CAPEM: ca, Optional: true}, "/m",
			[]string{"/c/fe.default.pem !*", "/c/cert_a.pem [verify optional no-ca-names ca-file /c/cca_1.pem] a.example", "/c/cert_b.pem [verify optional no-ca-names ca-file /c/cca_1.pem]"}},
		{"on the bind without an ACL directory", &model.ClientAuth{CA: "cca_1", CAPEM: ca}, "",
			[]string{"/c/fe.default.pem !*", "/c/cert_a.pem a.example", "/c/cert_b.pem"}},
		{"a CA name with syntax", &model.ClientAuth{CA: "x] verify none", CAPEM: ca}, "/m",
			[]string{"/c/fe.default.pem !*", "/c/cert_a.pem a.example", "/c/cert_b.pem"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := model.Frontend{Name: "fe", TLS: &model.TLS{Certificates: certs, Client: tc.client}}
			var got []string
			for _, e := range CrtListEntries(Options{CertDir: "/c", ACLDir: tc.acl}, f) {
				got = append(got, e.Line())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("lines %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("line %d: %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}
