package model

import "bytes"

// ClientAuth asks the clients of a frontend that terminates TLS for a
// certificate and verifies it against a CA bundle (a Gateway's
// spec.tls.frontend validation, per port). With the local driver,
// required verification is its crt-list lines' and a map entry (runtime
// data, render/clientauth.go); the fallback (Optional) is also its bind
// lines' (structure, a reload). The bundle is data: the gateway names the
// file for the port, and the local driver commits another bundle through
// the Runtime API (gateway/cafile.go, runtimeapi/cafiles.go).
type ClientAuth struct {
	// CA names the CA bundle's file (ValidCertName).
	CA string
	// CAPEM is the bundle: one or more PEM certificates. Never logged.
	CAPEM []byte
	// Optional: a client without a certificate, or with one that does
	// not verify, is let through too (AllowInsecureFallback); the
	// certificate is still asked for.
	Optional bool
}

// Equal compares two settings, the CA's contents included.
func (a *ClientAuth) Equal(b *ClientAuth) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.CA == b.CA && a.Optional == b.Optional && bytes.Equal(a.CAPEM, b.CAPEM)
}

// ValidClientAuth reports whether a may be rendered: a CA name and a
// bundle.
func ValidClientAuth(a *ClientAuth) bool {
	return a != nil && ValidCertName(a.CA) && len(a.CAPEM) > 0
}
