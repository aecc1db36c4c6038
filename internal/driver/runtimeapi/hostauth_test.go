package runtimeapi

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// TestHostClientAuthFiles: a certificate's own client verification (an
// Ingress host's) puts its CA file among the files written and
// committed, and its host into the client certificate map; a Client
// without a bundle writes no file and closes its host.
func TestHostClientAuthFiles(t *testing.T) {
	dir := t.TempDir()
	opts := render.Options{CertDir: dir, ACLDir: dir}
	f := model.Frontend{Name: "ing_https", TLS: &model.TLS{Default: "cert_a", Certificates: []model.Certificate{
		{Name: "cert_a", SNI: []string{"a.example"}, PEM: []byte("a"), Client: &model.ClientAuth{CA: "cca_a", CAPEM: []byte("ca")}},
		{Name: "cert_b", SNI: []string{"b.example"}, PEM: []byte("b"), Client: &model.ClientAuth{CA: "cca_b"}},
	}}}
	cfg := model.Config{Frontends: []model.Frontend{f}}
	cas := casOf(dir, cfg)
	if string(cas[render.CAFile(dir, "cca_a")]) != "ca" || len(cas) != 1 {
		t.Errorf("CA files %v, want only cca_a's", slices.Collect(maps.Keys(cas)))
	}
	if c := clientCAsOf(dir, cfg); !c[render.CAFile(dir, "cca_a")] || len(c) != 1 {
		t.Errorf("client CA files %v, want cca_a's", c)
	}
	files := clientAuthMapFiles(opts, cfg, nil)
	if len(files) != 1 {
		t.Fatalf("%d map files, want 1", len(files))
	}
	if l := files[0].lines; len(l) != 2 || !strings.HasPrefix(l[0], "ing_https/a.example required/") || l[1] != "ing_https/b.example closed" {
		t.Errorf("map lines %q, want a.example required/<CA digest>, b.example closed", l)
	}
	// The issuers' map: created empty for the worker, never pushed.
	if p, ok := issuerMapFile(opts, cfg); !ok || p != render.IssuerMapFile(dir) {
		t.Errorf("issuer map %q (%v), want %q", p, ok, render.IssuerMapFile(dir))
	}
	if err := writeIssuerMap(cfg, opts); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(render.IssuerMapFile(dir)); err != nil || len(b) != 0 {
		t.Errorf("issuer map on disk: %q, %v; want empty", b, err)
	}
	if _, ok := issuerMapFile(opts, model.Config{}); ok {
		t.Error("an issuer map with no frontend terminating TLS")
	}
}
