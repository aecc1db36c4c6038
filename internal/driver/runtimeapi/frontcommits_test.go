package runtimeapi

import (
	"maps"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestFrontClientFilesOf: the files under the one-kind rule
// (frontcommits.go) are the certificates of every verifying crt-list
// line and their CA files: a verifying frontend's lines, and a host's
// own line (an Ingress's auth-tls-*) on a frontend that verifies no one.
func TestFrontClientFilesOf(t *testing.T) {
	ca := func(name string) *model.ClientAuth {
		return &model.ClientAuth{CA: name, CAPEM: []byte("pem")}
	}
	for _, tc := range []struct {
		name               string
		tls                *model.TLS
		wantCerts, wantCAs []string
	}{
		{name: "no verification", tls: &model.TLS{Certificates: []model.Certificate{{Name: "cert_a"}}}},
		{name: "the frontend verifies", tls: &model.TLS{Client: ca("ca_gw"),
			Certificates: []model.Certificate{{Name: "cert_a"}, {Name: "cert_b"}}},
			wantCerts: []string{"d/cert_a.pem", "d/cert_b.pem"}, wantCAs: []string{"d/ca_gw.pem"}},
		{name: "a host verifies on its own line", tls: &model.TLS{
			Certificates: []model.Certificate{{Name: "cert_a"}, {Name: "cert_h", Client: ca("ca_h")}}},
			wantCerts: []string{"d/cert_h.pem"}, wantCAs: []string{"d/ca_h.pem"}},
		{name: "a host's own CA over the frontend's", tls: &model.TLS{Client: ca("ca_gw"),
			Certificates: []model.Certificate{{Name: "cert_a"}, {Name: "cert_h", Client: ca("ca_h")}}},
			wantCerts: []string{"d/cert_a.pem", "d/cert_h.pem"}, wantCAs: []string{"d/ca_gw.pem", "d/ca_h.pem"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := frontClientFilesOf("d", model.Config{Frontends: []model.Frontend{{Name: "fe", TLS: tc.tls}}})
			if c := slices.Sorted(maps.Keys(got.certs)); !slices.Equal(c, tc.wantCerts) {
				t.Errorf("certificates %v, want %v", c, tc.wantCerts)
			}
			if c := slices.Sorted(maps.Keys(got.cas)); !slices.Equal(c, tc.wantCAs) {
				t.Errorf("CA files %v, want %v", c, tc.wantCAs)
			}
		})
	}
}
