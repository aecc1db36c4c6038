package testcert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"sync/atomic"
	"testing"
	"time"
)

// KeyType is the kind of key a certificate made here carries.
type KeyType int

// The key types Key makes.
const (
	ECDSA KeyType = iota // P-256
	RSA                  // 2048 bits
	Ed25519
)

// Key makes a private key of type kt.
func Key(t testing.TB, kt KeyType) crypto.Signer {
	t.Helper()
	var (
		k   crypto.Signer
		err error
	)
	switch kt {
	case RSA:
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	case Ed25519:
		_, k, err = ed25519.GenerateKey(rand.Reader)
	default:
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Cert is a certificate made here with its key.
type Cert struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// PEM is the certificate's PEM block.
func (c Cert) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Cert.Raw})
}

// KeyPEM is the key's PEM block (PKCS#8, "PRIVATE KEY").
func (c Cert) KeyPEM(t testing.TB) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(c.Key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// Spec says what Issue makes. The zero value is an ECDSA leaf valid from
// an hour ago for a day, with no names.
type Spec struct {
	CN        string
	DNS       []string
	CA        bool
	Key       KeyType
	NotBefore time.Time // zero: an hour ago
	NotAfter  time.Time // zero: a day from now
	Client    bool      // a client certificate too (extended key usage clientAuth)
}

var serial atomic.Int64

// CA makes a self-signed root CA.
func CA(t testing.TB, cn string) Cert {
	t.Helper()
	return Issue(t, Spec{CN: cn, CA: true}, Cert{})
}

// Issue makes a certificate to spec, signed by parent (self-signed when
// parent has no certificate).
func Issue(t testing.TB, spec Spec, parent Cert) Cert {
	t.Helper()
	key := Key(t, spec.Key)
	nb, na := spec.NotBefore, spec.NotAfter
	if nb.IsZero() {
		nb = time.Now().Add(-time.Hour)
	}
	if na.IsZero() {
		na = time.Now().Add(24 * time.Hour)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: spec.CN},
		DNSNames: spec.DNS, NotBefore: nb, NotAfter: na, BasicConstraintsValid: true, IsCA: spec.CA,
		KeyUsage: x509.KeyUsageDigitalSignature}
	if spec.CA {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		if spec.Client {
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		}
	}
	if _, ok := key.(*rsa.PrivateKey); ok {
		tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
	}
	issuer, signer := tmpl, key
	if parent.Cert != nil {
		issuer, signer = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, key.Public(), signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return Cert{Cert: c, Key: key}
}
