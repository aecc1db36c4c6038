package render

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Client certificate verification per host (model.Certificate.Client: an
// Ingress's auth-tls-* annotations). The certificate's crt-list line
// carries the host's `verify required|optional no-ca-names ca-file F`
// (runtime data, as the frontend's own in clientauth.go), so a client
// naming the host in its handshake is verified against the host's CA:
// with "required" one without a valid certificate fails the handshake,
// with "optional" one without a certificate passes and one whose
// certificate does not verify fails. A request is routed by its Host,
// which a client may set to a verified host on a connection that named
// another one (or none, reaching the default line that asks nothing), so
// the map ClientAuthMapFile also holds, per such host, the key
// "frontend/host" with
//   - HostVerify: the request's Host must be the connection's server
//     name, else 421 (the client is told to connect again naming it);
//   - HostRequired: the same, and the connection must carry a client
//     certificate, else 400: one bind resumes a TLS session whatever
//     line made it, so a client resuming, under the host's name, a
//     session made under another name whose line asks for nothing
//     carries none (measured on 2.6.12: served, `ssl_c_used` 0,
//     `ssl_fc_is_resumed` 1, before this value);
//   - HostClosed: the host's verification cannot be written (its CA is
//     not valid, no crt-list line, or no certificate: model.TLS.Closed):
//     every request 403, never served unverified.
//
// HostVerify and HostRequired carry the CA bundle's digest after a
// slash ("required/0123abcd..."): one bind also resumes, under a
// verifying host's name, a session another host's line verified with
// another CA (measured on 2.6.12: a client holding only CA B's
// certificate reached CA A's host, 404 from routing). TLS 1.2 is caught
// by the 421 (the server name of a resumed 1.2 session is the one it was
// made under); TLS 1.3 is not, so the rules learn: a request on a full
// handshake (its line verified the client against the host's CA) adds
// "frontend/host|value|sha1 of the certificate's issuer" to the worker's
// IssuerMapFile, and a resumed session whose client certificate's issuer
// the host has not seen verified under that CA is answered 421 (the
// client connects again, a full handshake). Learned rather than written
// from the bundle: a client certificate issued by an intermediate the
// bundle lacks (the client sends it) verifies, and its issuer is that
// intermediate. The CA digest in the key drops what another bundle
// verified. IssuerMapFile is the worker's own, empty on disk: sessions
// do not outlive a worker (tickets and the session cache are the
// process's), so a new worker starts with nothing to resume.
//
// Map entries only: a host turning verification on or off reloads
// nothing; the rules are in every terminating HTTP frontend with a map
// directory. Only exact host names: a wildcard's hosts are not looked up
// (the Ingress compiler refuses auth-tls on wildcard hosts).

// Values of a host's entry in ClientAuthMapFile.
const (
	HostVerify   = "verify"
	HostRequired = "required"
	HostClosed   = "closed"
)

// certClientAuthLine is the sslbindconf of a certificate line verifying
// its own clients (a); ok is false when it cannot be written.
func certClientAuthLine(a *model.ClientAuth, opts Options) (string, bool) {
	if !model.ValidClientAuth(a) || opts.CertDir == "" || !model.ValidFilePath(CAFile(opts.CertDir, a.CA)) {
		return "", false
	}
	mode := "required"
	if a.Optional {
		mode = "optional"
	}
	return "verify " + mode + " no-ca-names ca-file " + CAFile(opts.CertDir, a.CA), true
}

// HostClientAuthEntries are f's per-host entries of ClientAuthMapFile,
// sorted by key: each exact server name of a certificate with its own
// Client, HostVerify when its line verifies, else HostClosed; and each
// of TLS.Closed, HostClosed. A name of two such certificates is closed
// unless both verify alike.
func HostClientAuthEntries(opts Options, f model.Frontend) []MapEntry {
	if f.TLS == nil || !ClientAuthOnLines(opts) {
		return nil
	}
	listed := map[string]string{}
	for _, e := range CrtListEntries(opts, f) {
		listed[e.File] = e.Opts
	}
	val := map[string]string{}
	line := map[string]string{}
	for _, c := range f.TLS.Certificates {
		if c.Client == nil {
			continue
		}
		want, ok := certClientAuthLine(c.Client, opts)
		got, in := listed[CertFile(opts.CertDir, c.Name)]
		v := HostVerify
		if !c.Client.Optional {
			v = HostRequired
		}
		v += "/" + caDigest(c.Client.CAPEM)
		if !ok || !in || got != want {
			v = HostClosed
		}
		for _, h := range c.SNI {
			if !model.ValidSNI(h) || h[0] == '*' {
				continue
			}
			k := f.Name + "/" + h
			if old, seen := val[k]; seen && (old != v || line[k] != want) {
				v = HostClosed
			}
			val[k], line[k] = v, want
		}
	}
	for _, h := range f.TLS.Closed {
		if model.ValidSNI(h) && h[0] != '*' {
			val[f.Name+"/"+h] = HostClosed
		}
	}
	out := make([]MapEntry, 0, len(val))
	for _, k := range slices.Sorted(maps.Keys(val)) {
		out = append(out, MapEntry{Key: k, Value: val[k]})
	}
	return out
}

// caDigest names a CA bundle's contents in HostVerify and HostRequired
// values: 16 hex digits of its SHA-256.
func caDigest(pem []byte) string {
	sum := sha256.Sum256(pem)
	return hex.EncodeToString(sum[:8])
}

// IssuerMapFile is the map under dir of the client certificate issuers
// each verifying host has seen verified on a full handshake: written by
// the worker's own rules (set-map), empty on disk.
func IssuerMapFile(dir string) string { return dir + "/clientissuers.map" }

// writeHostClientAuth writes the per-host rules reading mapFile and
// issuerFile, after writeMisdirected (which sets txn.sni).
func writeHostClientAuth(w func(...string), mapFile, issuerFile string) {
	verifying := "{ var(txn.cv) -m beg " + HostVerify + "/ " + HostRequired + "/ }"
	w("\thttp-request set-var-fmt(txn.ck) \"%[fe_name]/%[var(txn.host)]\"")
	w("\thttp-request set-var(txn.cv) var(txn.ck),map_str(" + mapFile + ")")
	w("\thttp-request deny status 403 if { var(txn.cv) -m str " + HostClosed + " }")
	w("\thttp-request return status 421 if " + verifying + " !{ var(txn.sni),strcmp(txn.host) eq 0 }")
	w("\thttp-request deny status 400 if { var(txn.cv) -m beg " + HostRequired + "/ } !{ ssl_c_used }")
	w("\thttp-request set-var-fmt(txn.ci) \"%[var(txn.ck)]|%[var(txn.cv)]|%[ssl_c_i_dn,sha1,hex]\" if " + verifying + " { ssl_c_used }")
	w("\thttp-request set-map(" + issuerFile + ") %[var(txn.ci)] 1 if { var(txn.ci) -m found } !{ ssl_fc_is_resumed } { ssl_c_verify 0 } !{ var(txn.ci),map_str(" + issuerFile + ") -m found }")
	w("\thttp-request return status 421 if { var(txn.ci) -m found } { ssl_fc_is_resumed } !{ var(txn.ci),map_str(" + issuerFile + ") -m found }")
}
