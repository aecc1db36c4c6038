package model

import (
	"bytes"
	"slices"
	"strings"
)

// TLS is a frontend's TLS termination (an HTTPS listener; TLSRoute's
// Terminate mode later): its binds take TLS with these certificates and
// hand the decrypted stream on. Whether a frontend terminates TLS and
// which protocols it offers are its structure; which certificates it
// serves are data the driver changes at runtime (crt-list and
// certificate store commands), never through a reload.
type TLS struct {
	// Certificates are served by the client's server name (SNI), sorted
	// by Name, no two with one Name. At least one.
	Certificates []Certificate
	// Default is the Name of the certificate served to a client whose
	// server name no certificate is for (or that sends none).
	Default string
	// ALPN are the application protocols offered, in order of
	// preference ("h2", "http/1.1"); empty: none (ValidALPN).
	ALPN []string
	// Client, when set, verifies the clients' certificates
	// (clientauth.go); nil: none is asked for.
	Client *ClientAuth
	// Closed are server names whose requests are refused (403): hosts
	// whose clients must be verified (Certificate.Client) but that have
	// no certificate to verify them on (an Ingress's TLS Secret missing).
	Closed []string
}

// Certificate is one certificate and key a frontend serves.
type Certificate struct {
	// Name names its file (ValidCertName): Name("cert", namespace,
	// secret name) for a Secret, so the frontends that share a Secret
	// share the certificate.
	Name string
	// SNI are the server names it is served for (ValidSNI each; a
	// "*.suffix" wildcard takes one label); empty: the names the
	// certificate itself carries.
	SNI []string
	// PEM is the bundle HAProxy loads: certificates then key, no blank
	// line (certs.Parse makes it). Never logged.
	PEM []byte
	// Client, when set, verifies the clients of this certificate's
	// server names (an Ingress's auth-tls-*, per host) on its crt-list
	// line, over TLS.Client; nil: the frontend's.
	Client *ClientAuth
}

// ALPNProtocols are the protocols a frontend may offer.
var ALPNProtocols = []string{"h2", "http/1.1"}

// ValidALPN reports whether every protocol of p is known, none twice.
func ValidALPN(p []string) bool {
	for i, x := range p {
		if !slices.Contains(ALPNProtocols, x) || slices.Contains(p[:i], x) {
			return false
		}
	}
	return true
}

// ValidCertName reports whether n may name a certificate (and its file):
// what Name builds, nothing else.
func ValidCertName(n string) bool {
	if n == "" || len(n) > MaxNameLen {
		return false
	}
	for i := 0; i < len(n); i++ {
		if !NameByte(n[i]) && n[i] != '_' {
			return false
		}
	}
	return true
}

// Terminates reports whether f terminates TLS.
func (f Frontend) Terminates() bool { return f.TLS != nil }

// Cert is t's certificate of that name, nil when it has none.
func (t *TLS) Cert(name string) *Certificate {
	i, ok := slices.BinarySearchFunc(t.Certificates, name, func(c Certificate, n string) int {
		switch {
		case c.Name < n:
			return -1
		case c.Name > n:
			return 1
		}
		return 0
	})
	if !ok {
		return nil
	}
	return &t.Certificates[i]
}

// Equal compares two terminations, certificates included.
func (t *TLS) Equal(u *TLS) bool {
	if t == nil || u == nil {
		return t == u
	}
	return t.Default == u.Default && slices.Equal(t.ALPN, u.ALPN) && t.Client.Equal(u.Client) && slices.Equal(t.Closed, u.Closed) &&
		slices.EqualFunc(t.Certificates, u.Certificates, func(a, b Certificate) bool {
			return a.Name == b.Name && slices.Equal(a.SNI, b.SNI) && bytes.Equal(a.PEM, b.PEM) && a.Client.Equal(b.Client)
		})
}

// HeldName is a server name (lower case; a wildcard "*.suffix") a
// shared TLS listener served for frontend Front: Config.HTTPSHeld; CA
// names the client CA its line verified with ("": none). A frontend
// that verifies otherwise now holds none of its names.
type HeldName struct{ SNI, Front, CA string }

// CompareHeld orders held names by name, then frontend, then CA.
func CompareHeld(a, b HeldName) int {
	if c := strings.Compare(a.SNI, b.SNI); c != 0 {
		return c
	}
	if c := strings.Compare(a.Front, b.Front); c != 0 {
		return c
	}
	return strings.Compare(a.CA, b.CA)
}
