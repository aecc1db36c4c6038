package render

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TLS passthrough beside termination on one address and port
// (model.HTTP.Passthrough: an Ingress's ssl-passthrough). HAProxy
// terminates TLS on a bind or does not, so a frontend that does both
// is two: a TCP frontend (PassFrontend) takes the binds, waits for the
// ClientHello and looks its server name up in the table's map "pass"
// (HTTPPass: name → backend); a name found goes to that backend as it
// is, the handshake never seen by HAProxy; any other connection goes,
// through a backend of one server (PassBackend), to the terminating
// frontend itself, which binds an abstract socket of its own instead of
// the address (accept-proxy: the PROXY protocol v2 header the server
// line sends keeps the client's address for the HTTP rules, logs and
// source ranges). The frontend keeps its name, so its crt-list, maps and
// client verification are unchanged. The splitter is structure (one
// reload when it appears); the names it passes are map data, changed
// through the Runtime API like the table's other maps: a passthrough
// host added, moved to another backend or removed reloads nothing
// unless its backend is new to HAProxy.

// HTTPPass is the map kind of a table's passthrough names.
const HTTPPass = "pass"

// PassFrontend is the splitter in front of terminating frontend fe.
func PassFrontend(fe string) string { return "_sni_" + fe }

// PassBackend is the splitter's way to terminating frontend fe.
func PassBackend(fe string) string { return "_tls_" + fe }

// IsPassBackend reports whether backend is a splitter's way to its
// terminating frontend (PassBackend): no slots of the model, so the
// driver leaves it out of the server states it reads.
func IsPassBackend(backend string) bool { return strings.HasPrefix(backend, "_tls_") }

// passSocket is the abstract socket terminating frontend fe binds behind
// its splitter: named by the map directory too, so two HAProxy
// instances of one network namespace never share one (abstract sockets
// have no file to keep them apart), and short enough for any name.
func passSocket(fe string, opts Options) string {
	sum := sha256.Sum256([]byte(opts.ACLDir + "\x00" + fe))
	return "abns@hks_pass_" + hex.EncodeToString(sum[:8])
}

// passthroughOn reports whether f is written behind a splitter: a
// terminating HTTP frontend with a Passthrough, and a map directory.
func passthroughOn(f model.Frontend, opts Options) bool {
	return f.TLS != nil && f.HTTP != nil && f.HTTP.Passthrough != nil && opts.ACLDir != "" &&
		model.ValidFilePath(HTTPMapFile(opts.ACLDir, f.Name, HTTPPass))
}

// writePassthrough writes f's splitter and the backend to f, before f.
func writePassthrough(w func(...string), f model.Frontend, opts Options) {
	w("frontend", PassFrontend(f.Name))
	for _, bd := range f.Binds {
		line := "\tbind " + bindAddr(bd)
		if bd.Transparent {
			line += " transparent"
		}
		if f.AcceptProxy {
			line += " accept-proxy"
		}
		w(line)
	}
	if f.MaxConn > 0 {
		w("\tmaxconn", strconv.Itoa(f.MaxConn))
	}
	if f.Restricted() {
		w("\t" + sourceRule(f, opts))
	}
	w("\ttcp-request inspect-delay 5s")
	w("\ttcp-request content accept if { req.ssl_hello_type 1 }")
	look := "req.ssl_sni,lower,map_str(" + HTTPMapFile(opts.ACLDir, f.Name, HTTPPass) + ")"
	w("\tuse_backend %[" + look + "] if { " + look + " -m found }")
	w("\tdefault_backend", PassBackend(f.Name))
	w("")
	w("backend", PassBackend(f.Name))
	w("\tserver s", passSocket(f.Name, opts), "send-proxy-v2")
	w("")
}

// passEntries adds the pass map's entries: each route's name (exact,
// lower case) and backend, the first route of a name.
func passEntries(out map[string][]HTTPMapEntry, p *model.Passthrough) {
	if p == nil {
		return
	}
	seen := map[string]bool{}
	for _, r := range p.Routes {
		sni := strings.ToLower(r.SNI)
		if !model.ValidSNI(sni) || strings.HasPrefix(sni, "*") || !model.ValidCertName(r.Backend) || seen[sni] {
			continue
		}
		seen[sni] = true
		out[HTTPPass] = append(out[HTTPPass], HTTPMapEntry{sni, r.Backend})
	}
}
