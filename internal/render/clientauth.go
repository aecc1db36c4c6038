package render

import "github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"

// Client certificate verification on a terminating frontend
// (model.ClientAuth), measured per version in docs/gateway.md
// ("Verification per crt-list line", TestCrtListLineVerifyAtRuntime).
//
// With an ACL directory (the local driver's), the verification of
// AllowValidOnly is runtime data: each certificate line of the crt-list
// carries `[verify required no-ca-names ca-file F]` (CrtListEntries), the
// driver replaces a changed line (`del`/`add ssl crt-list`) and creates
// a CA file the worker does not hold (`new ssl ca-file`), and the bind
// carries nothing of it. The default line (no SNI, or a name no line
// has) is fixed at start and never asks for a certificate, so every
// terminating frontend has one rule refusing, right after the handshake,
// a client that presented none when the map ClientAuthMapFile names the
// frontend "required". Turning AllowValidOnly on or off, or changing its
// CA, reloads nothing.
//
// AllowInsecureFallback (Optional) must let a certificate of another CA
// through: its lines carry `verify optional`, and the bind the ignore
// lists (`ca-ignore-err all crt-ignore-err all`), which are bind options
// only and would let such a certificate through `verify required` lines
// too. So the fallback, on or off, is the bind's: a reload.
//
// Without an ACL directory the verification stays on the bind line, as
// before: `verify required|optional ca-file F no-ca-names` (and the
// ignore lists for optional).
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

// ClientAuthMapFile is the map under dir naming the frontends whose
// clients must present a certificate (value "required").
func ClientAuthMapFile(dir string) string { return dir + "/clientauth.map" }

// ClientAuthOnLines reports whether f's client verification is written
// on its crt-list lines and the map rather than on its bind lines.
func ClientAuthOnLines(opts Options) bool {
	return opts.ACLDir != "" && model.ValidFilePath(ClientAuthMapFile(opts.ACLDir))
}

// ClientAuthRequired reports whether ClientAuthMapFile names f: it
// verifies its clients, AllowValidOnly.
func ClientAuthRequired(f model.Frontend) bool {
	return f.TLS != nil && model.ValidClientAuth(f.TLS.Client) && !f.TLS.Client.Optional
}

// clientAuthLine is the sslbindconf of f's certificate lines: "" when
// they verify nothing, or when the bind does.
func clientAuthLine(t *model.TLS, opts Options) string {
	if t == nil || !model.ValidClientAuth(t.Client) || opts.CertDir == "" || !ClientAuthOnLines(opts) {
		return ""
	}
	mode := "required"
	if t.Client.Optional {
		mode = "optional"
	}
	return "verify " + mode + " no-ca-names ca-file " + CAFile(opts.CertDir, t.Client.CA)
}

// clientAuthRule is the frontend's rule for the default line's clients
// (with the verification on the lines), "" otherwise. The fixed HTTPS
// listener's looks up the frontend its connection's key stands for
// (HTTPSListenerMapFile): a client of a verifying frontend's address
// that presented no certificate (it named another frontend's name, or
// none) is refused as that frontend's own bind refuses it.
func clientAuthRule(f model.Frontend, opts Options) string {
	if f.TLS == nil || !ClientAuthOnLines(opts) {
		return ""
	}
	name := "fe_name"
	if f.Name == HTTPSListenerFrontend {
		name = "var(" + httpListenerVar + "),map_str(" + HTTPSListenerMapFile(opts.ACLDir) + ")"
	}
	return "\ttcp-request session reject if !{ ssl_c_used } { " + name + ",map(" + ClientAuthMapFile(opts.ACLDir) + ") -m str required }"
}

// clientAuthBind is what a bind line of f carries for its client
// certificates: "" when it verifies none (or its lines do); ok false
// when it should but cannot be written.
func clientAuthBind(t *model.TLS, opts Options) (args string, ok bool) {
	if t == nil || t.Client == nil {
		return "", true
	}
	a := t.Client
	if !model.ValidClientAuth(a) || opts.CertDir == "" || !model.ValidFilePath(CAFile(opts.CertDir, a.CA)) {
		return "", false
	}
	if ClientAuthOnLines(opts) {
		if a.Optional {
			return " ca-ignore-err all crt-ignore-err all", true
		}
		return "", true
	}
	if a.Optional {
		return " verify optional ca-file " + CAFile(opts.CertDir, a.CA) + " no-ca-names ca-ignore-err all crt-ignore-err all", true
	}
	return " verify required ca-file " + CAFile(opts.CertDir, a.CA) + " no-ca-names", true
}
