package model

import (
	"bytes"
	"regexp"
	"strings"
)

// BackendTLS makes a backend's servers speak TLS (a BackendTLSPolicy, an
// Ingress's backend-protocol HTTPS): each connection sends SNI as its
// server name and accepts only a certificate that chains to the CA
// bundle and is for that name. Whether a backend speaks TLS, its SNI and
// the name of its CA file are structure (the server lines carry them);
// the bundle of a name is not: the local driver commits another bundle
// of the same name through the Runtime API, which HAProxy applies only
// to servers presenting a client certificate (Cert). So the gateway
// names the bundle of a backend without Cert by the digest of its
// contents too: another CA is another file and a reload
// (gateway/cafile.go, runtimeapi/cafiles.go).
type BackendTLS struct {
	// SNI is the server name sent and verified (ValidSNI, no wildcard).
	SNI string
	// CA names the CA bundle's file (ValidCertName): Name("ca",
	// namespace, policy name, digest of CAPEM).
	CA string
	// CAPEM is the bundle: one or more PEM certificates. Never logged.
	CAPEM []byte
	// Cert, when set, names the file (ValidCertName) of the client
	// certificate and key presented to the servers (a Gateway's
	// spec.tls.backend.clientCertificateRef); CertPEM is that bundle
	// (certs.Parse). Never logged.
	Cert    string
	CertPEM []byte
	// The Ingresses' backend TLS (internal/ingress/backendtls.go) may
	// ask for less than a BackendTLSPolicy: SNI "" sends no server name;
	// NoVerify does not verify the servers' certificates (`verify none`,
	// ingress-nginx's proxy-ssl-verify off, its default), CA and CAPEM
	// then empty; VerifyHost, when set, is the name the certificate must
	// carry in place of SNI (HAProxy's verifyhost, which it checks only
	// when no SNI is sent: with an SNI, the SNI's name is checked). With
	// neither SNI nor VerifyHost, only the chain is verified.
	NoVerify   bool
	VerifyHost string
	// The Ingresses' TLS versions and ciphers (ingress-nginx's proxy-ssl-protocols,
	// proxy-ssl-ciphers; HAProxy Ingress's ssl-ciphers-backend,
	// ssl-cipher-suites-backend): MinVer and MaxVer bound the versions
	// offered (HAProxy's ssl-min-ver, ssl-max-ver: ValidTLSVersion);
	// Ciphers is the OpenSSL list for TLS 1.2 and older, CipherSuites the
	// TLS 1.3 one (ValidCipherList). "": the library's.
	MinVer, MaxVer        string
	Ciphers, CipherSuites string
}

// SameStructure reports whether t and u render the same server lines:
// equal but for the CA's contents.
func (t *BackendTLS) SameStructure(u *BackendTLS) bool {
	if t == nil || u == nil {
		return t == u
	}
	return t.SNI == u.SNI && t.CA == u.CA && t.Cert == u.Cert && t.NoVerify == u.NoVerify && t.VerifyHost == u.VerifyHost &&
		t.MinVer == u.MinVer && t.MaxVer == u.MaxVer && t.Ciphers == u.Ciphers && t.CipherSuites == u.CipherSuites
}

// Equal compares two settings, the CA's contents included.
func (t *BackendTLS) Equal(u *BackendTLS) bool {
	return t.SameStructure(u) && (t == nil || bytes.Equal(t.CAPEM, u.CAPEM) && bytes.Equal(t.CertPEM, u.CertPEM))
}

// ValidBackendTLS reports whether t may be rendered: exact server names
// (or none, an Ingress's) and a CA name unless NoVerify.
func ValidBackendTLS(t *BackendTLS) bool {
	exact := func(n string) bool { return n == "" || ValidSNI(n) && !strings.Contains(n, "*") }
	return t != nil && exact(t.SNI) && exact(t.VerifyHost) &&
		(t.NoVerify && t.CA == "" && len(t.CAPEM) == 0 || !t.NoVerify && ValidCertName(t.CA) && len(t.CAPEM) > 0) &&
		(t.Cert == "" || ValidCertName(t.Cert) && len(t.CertPEM) > 0) &&
		(t.MinVer == "" || ValidTLSVersion(t.MinVer)) && (t.MaxVer == "" || ValidTLSVersion(t.MaxVer)) &&
		(t.Ciphers == "" || ValidCipherList(t.Ciphers)) && (t.CipherSuites == "" || ValidCipherList(t.CipherSuites))
}

// ValidTLSVersion reports whether v is a version HAProxy's ssl-min-ver
// and ssl-max-ver take (TLS only).
func ValidTLSVersion(v string) bool {
	switch v {
	case "TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3":
		return true
	}
	return false
}

// cipherName is one element of an OpenSSL cipher or suite list: a name
// or alias with its ! - + prefix, or @STRENGTH.
var cipherName = regexp.MustCompile(`^[!+-]?@?[A-Za-z0-9][A-Za-z0-9_.=-]{0,63}$`)

// ValidCipherList reports whether s is one word of cipher names HAProxy
// cannot read as anything else (no space, quote, comment or variable);
// whether OpenSSL knows the names is the caller's (an Ingress's list is
// of known names only: ingress/tlsopts.go).
func ValidCipherList(s string) bool {
	names := strings.Split(s, ":")
	if len(names) > 64 {
		return false
	}
	for _, n := range names {
		if !cipherName.MatchString(n) || strings.Contains(n, "\n") {
			return false
		}
	}
	return true
}
