package model

import (
	"bytes"
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
}

// SameStructure reports whether t and u render the same server lines:
// equal but for the CA's contents.
func (t *BackendTLS) SameStructure(u *BackendTLS) bool {
	if t == nil || u == nil {
		return t == u
	}
	return t.SNI == u.SNI && t.CA == u.CA && t.Cert == u.Cert && t.NoVerify == u.NoVerify && t.VerifyHost == u.VerifyHost
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
		(t.Cert == "" || ValidCertName(t.Cert) && len(t.CertPEM) > 0)
}
