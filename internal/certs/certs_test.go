package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// pemCerts reads back the certificates of a bundle, in order.
func pemCerts(t *testing.T, b []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return out
		}
		if blk.Type == "CERTIFICATE" {
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
		}
	}
}

func TestParse(t *testing.T) {
	now := time.Now()
	root := testcert.CA(t, "root")
	inter := testcert.Issue(t, testcert.Spec{CN: "intermediate", CA: true}, root)
	leaf := testcert.Issue(t, testcert.Spec{CN: "ignored", DNS: []string{"A.Example.com", "*.b.example.com", "a.example.com"}}, inter)
	other := testcert.Issue(t, testcert.Spec{CN: "other", DNS: []string{"other.example"}}, root)
	rsaLeaf := testcert.Issue(t, testcert.Spec{DNS: []string{"rsa.example"}, Key: testcert.RSA}, root)
	edLeaf := testcert.Issue(t, testcert.Spec{DNS: []string{"ed.example"}, Key: testcert.Ed25519}, root)
	cnOnly := testcert.Issue(t, testcert.Spec{CN: "cn.example"}, root)
	future := testcert.Issue(t, testcert.Spec{DNS: []string{"f.example"}, NotBefore: now.Add(time.Hour)}, root)
	skewed := testcert.Issue(t, testcert.Spec{DNS: []string{"s.example"}, NotBefore: now.Add(time.Minute)}, root)
	expired := testcert.Issue(t, testcert.Spec{DNS: []string{"e.example"}, NotBefore: now.Add(-48 * time.Hour),
		NotAfter: now.Add(-time.Hour)}, root)
	many := make([]string, 400)
	for i := range many {
		many[i] = fmt.Sprintf("host-%03d.a-rather-long-domain.example", i)
	}
	huge := testcert.Issue(t, testcert.Spec{DNS: many}, root)
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	weakDER := x509.MarshalPKCS1PrivateKey(weak)
	ecDER, err := x509.MarshalECPrivateKey(leaf.Key.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}

	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	crlf := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("  \r\n")) }

	tests := []struct {
		name      string
		crt, key  []byte
		wantErr   error
		wantChain []*x509.Certificate
		wantNames []string
		wantType  string
		dropped   int
		expired   bool
	}{
		{name: "leaf and intermediate", crt: cat(leaf.PEM(), inter.PEM()), key: leaf.KeyPEM(t),
			wantChain: []*x509.Certificate{leaf.Cert, inter.Cert}, wantNames: []string{"a.example.com", "*.b.example.com"}, wantType: "ECDSA"},
		{name: "shuffled, with root and an unrelated certificate", crt: cat(other.PEM(), root.PEM(), inter.PEM(), leaf.PEM()),
			key: leaf.KeyPEM(t), wantChain: []*x509.Certificate{leaf.Cert, inter.Cert, root.Cert}, dropped: 1,
			wantNames: []string{"a.example.com", "*.b.example.com"}, wantType: "ECDSA"},
		{name: "blank lines, CRLF, trailing spaces and text around blocks",
			crt:       cat([]byte("subject=leaf\r\n\r\n"), crlf(leaf.PEM()), []byte("\n\n\n"), crlf(inter.PEM()), []byte("\n \n")),
			key:       cat([]byte("\n"), crlf(leaf.KeyPEM(t)), []byte("\n\n")),
			wantChain: []*x509.Certificate{leaf.Cert, inter.Cert}, wantNames: []string{"a.example.com", "*.b.example.com"}, wantType: "ECDSA"},
		{name: "RSA", crt: rsaLeaf.PEM(), key: rsaLeaf.KeyPEM(t), wantChain: []*x509.Certificate{rsaLeaf.Cert},
			wantNames: []string{"rsa.example"}, wantType: "RSA"},
		{name: "RSA PKCS#1 key", crt: rsaLeaf.PEM(), key: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY",
			Bytes: x509.MarshalPKCS1PrivateKey(rsaLeaf.Key.(*rsa.PrivateKey))}), wantChain: []*x509.Certificate{rsaLeaf.Cert},
			wantNames: []string{"rsa.example"}, wantType: "RSA"},
		{name: "SEC 1 EC key", crt: leaf.PEM(), key: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER}),
			wantChain: []*x509.Certificate{leaf.Cert}, wantNames: []string{"a.example.com", "*.b.example.com"}, wantType: "ECDSA"},
		{name: "Ed25519", crt: edLeaf.PEM(), key: edLeaf.KeyPEM(t), wantChain: []*x509.Certificate{edLeaf.Cert},
			wantNames: []string{"ed.example"}, wantType: "Ed25519"},
		{name: "common name when no SAN", crt: cnOnly.PEM(), key: cnOnly.KeyPEM(t), wantChain: []*x509.Certificate{cnOnly.Cert},
			wantNames: []string{"cn.example"}, wantType: "ECDSA"},
		{name: "expired: returned, reported", crt: expired.PEM(), key: expired.KeyPEM(t), wantChain: []*x509.Certificate{expired.Cert},
			wantNames: []string{"e.example"}, wantType: "ECDSA", expired: true},
		{name: "made by a clock a minute ahead", crt: skewed.PEM(), key: skewed.KeyPEM(t), wantChain: []*x509.Certificate{skewed.Cert},
			wantNames: []string{"s.example"}, wantType: "ECDSA"},
		{name: "key of another certificate", crt: cat(leaf.PEM(), inter.PEM()), key: other.KeyPEM(t), wantErr: ErrKeyMismatch},
		{name: "key of the intermediate only", crt: leaf.PEM(), key: inter.KeyPEM(t), wantErr: ErrKeyMismatch},
		{name: "not yet valid", crt: future.PEM(), key: future.KeyPEM(t), wantErr: ErrNotYetValid},
		{name: "no certificate", crt: leaf.KeyPEM(t), key: leaf.KeyPEM(t), wantErr: ErrInvalid},
		{name: "empty", crt: nil, key: nil, wantErr: ErrInvalid},
		{name: "garbage", crt: []byte("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"), key: leaf.KeyPEM(t), wantErr: ErrInvalid},
		{name: "bad DER", crt: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}}), key: leaf.KeyPEM(t), wantErr: ErrInvalid},
		{name: "two keys", crt: leaf.PEM(), key: cat(leaf.KeyPEM(t), other.KeyPEM(t)), wantErr: ErrInvalid},
		{name: "encrypted key", crt: leaf.PEM(), key: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY",
			Headers: map[string]string{"Proc-Type": "4,ENCRYPTED"}, Bytes: []byte{1}}), wantErr: ErrUnsupportedKey},
		{name: "RSA 1024", crt: leaf.PEM(), key: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: weakDER}), wantErr: ErrUnsupportedKey},
		{name: "too large for one payload", crt: huge.PEM(), key: huge.KeyPEM(t), wantErr: ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Parse(tt.crt, tt.key, now)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "PRIVATE KEY-----") || strings.Contains(err.Error(), "BEGIN") {
					t.Errorf("error carries PEM: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b.PEM, []byte("\n\n")) || bytes.ContainsAny(b.PEM, "\r\t") || b.PEM[0] == '\n' ||
				bytes.Contains(b.PEM, []byte(" \n")) {
				t.Errorf("bundle has blank lines, CR or trailing spaces")
			}
			got := pemCerts(t, b.PEM)
			if !slices.EqualFunc(got, tt.wantChain, func(a, b *x509.Certificate) bool { return a.Equal(b) }) {
				t.Errorf("chain of %d certificates, want %d in order", len(got), len(tt.wantChain))
			}
			if !slices.Equal(b.Names, tt.wantNames) || b.KeyType != tt.wantType || b.Dropped != tt.dropped ||
				b.Chain != len(tt.wantChain) || b.Expired(now) != tt.expired {
				t.Errorf("got %v dropped %d expired %v", b, b.Dropped, b.Expired(now))
			}
			if !bytes.HasSuffix(b.PEM, []byte("-----END PRIVATE KEY-----\n")) {
				t.Errorf("bundle does not end with its PKCS#8 key")
			}
			// Parsing the bundle again gives the same bundle.
			again, err := Parse(b.PEM, b.PEM, now)
			if err != nil || !bytes.Equal(again.PEM, b.PEM) {
				t.Errorf("bundle does not parse back to itself: %v", err)
			}
			if s := b.String(); strings.Contains(s, "PRIVATE") {
				t.Errorf("String carries the key: %s", s)
			}
		})
	}
}

// The bundle of a leaf and its intermediate verifies with the root alone.
func TestParseChainVerifies(t *testing.T) {
	root := testcert.CA(t, "root")
	inter := testcert.Issue(t, testcert.Spec{CN: "intermediate", CA: true}, root)
	leaf := testcert.Issue(t, testcert.Spec{DNS: []string{"www.example.org"}}, inter)
	b, err := Parse(append(inter.PEM(), leaf.PEM()...), leaf.KeyPEM(t), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got := pemCerts(t, b.PEM)
	roots, inters := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(root.Cert)
	for _, c := range got[1:] {
		inters.AddCert(c)
	}
	if _, err := got[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inters, DNSName: "www.example.org"}); err != nil {
		t.Fatal(err)
	}
}

func TestNamesSkipsIPs(t *testing.T) {
	c := &x509.Certificate{DNSNames: []string{"Host.Example.", "bad name", "x.example"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	if got := Names(c); !slices.Equal(got, []string{"host.example", "x.example"}) {
		t.Fatalf("Names = %v", got)
	}
}
