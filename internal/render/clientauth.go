package render

import "github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"

// Client certificate verification on a terminating frontend
// (model.ClientAuth): the bind line asks every client for a certificate
// and verifies it against the CA file under the certificate directory
// (CAFile, written by the driver before the reload that names it, beside
// the backends' CA files). On the bind line, not per crt-list line: the
// crt-list lines added at runtime inherit it (measured on 2.6.12), a
// client naming no known host is verified too (the default line cannot
// be replaced at runtime), and `ca-ignore-err`/`crt-ignore-err`, which
// the insecure fallback needs, are bind options only (a crt-list line
// takes verify and ca-file but not those).
//
//   - required: `verify required ca-file F no-ca-names`: a client without a
//     certificate, or with one that does not chain to F, fails the
//     handshake;
//   - optional (AllowInsecureFallback): `verify optional ca-file F
//     no-ca-names ca-ignore-err all crt-ignore-err all`: the certificate is asked
//     for, and the handshake goes on without one or with one that does
//     not verify.
//
// `no-ca-names`: the handshake names no CA to the client. The file is
// named for the port and its bundle committed at runtime when it changes
// (gateway/cafile.go); HAProxy 2.6-3.4 verify against the committed
// bundle but keep sending the names of the one loaded at start, so a
// client choosing its certificate by those names would pick for the old
// CA (docs/gateway.md, "CA files at runtime"). Clients with one certificate
// send it whatever the names.
//
// Settings the model's validator refuses, or no certificate directory,
// leave the frontend without binds (tlsBind), never verifying nothing.

// clientAuthBind is what a bind line of f carries for its client
// certificates: "" when it verifies none; ok false when it should but
// cannot be written.
func clientAuthBind(t *model.TLS, opts Options) (args string, ok bool) {
	if t == nil || t.Client == nil {
		return "", true
	}
	a := t.Client
	if !model.ValidClientAuth(a) || opts.CertDir == "" || !model.ValidFilePath(CAFile(opts.CertDir, a.CA)) {
		return "", false
	}
	if a.Optional {
		return " verify optional ca-file " + CAFile(opts.CertDir, a.CA) + " no-ca-names ca-ignore-err all crt-ignore-err all", true
	}
	return " verify required ca-file " + CAFile(opts.CertDir, a.CA) + " no-ca-names", true
}
