package certs

import (
	"bytes"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// FuzzParse: no input panics Parse, and a bundle it returns has no blank
// line or CR (what `set ssl cert` would cut) and parses back to itself.
func FuzzParse(f *testing.F) {
	root := testcert.CA(f, "root")
	leaf := testcert.Issue(f, testcert.Spec{DNS: []string{"a.example"}}, root)
	f.Add(append(leaf.PEM(), root.PEM()...), leaf.KeyPEM(f))
	f.Add(bytes.ReplaceAll(leaf.PEM(), []byte("\n"), []byte("\r\n\n")), leaf.KeyPEM(f))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"), []byte{})
	now := time.Now()
	f.Fuzz(func(t *testing.T, crt, key []byte) {
		b, err := Parse(crt, key, now)
		if err != nil {
			return
		}
		if bytes.Contains(b.PEM, []byte("\n\n")) || bytes.ContainsRune(b.PEM, '\r') || len(b.PEM) > MaxBundle {
			t.Fatalf("bundle not normalised: %q", b.PEM)
		}
		again, err := Parse(b.PEM, b.PEM, now)
		if err != nil || !bytes.Equal(again.PEM, b.PEM) {
			t.Fatalf("bundle does not parse back to itself: %v", err)
		}
	})
}
