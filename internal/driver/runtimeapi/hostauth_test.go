package runtimeapi

import (
	"maps"
	"slices"
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
	if want := []string{"ing_https/a.example required", "ing_https/b.example closed"}; !slices.Equal(files[0].lines, want) {
		t.Errorf("map lines %q, want %q", files[0].lines, want)
	}
}
