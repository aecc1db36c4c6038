package render

import (
	"cmp"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TLS to the servers of an HTTP backend (model.BackendTLS): every server
// of the backend, free slots included, gets `ssl verify required` with
// the CA file under the certificate directory (Options.CertDir), the
// policy's hostname as SNI and as the name the certificate must carry
// (`verifyhost`: a DNS subjectAltName, or the CN without any). The file
// is named by its CA (CAFile), written by the driver before the reload
// that needs it; a backend that starts or stops speaking TLS, or changes
// its hostname or CA (a new name), is a reload (its server lines
// change).
//
// Without a certificate directory (render with no driver), or with
// settings the model's validator refuses, the backend refuses every
// request (503) rather than send it in clear or unverified.

// CAFile is CA name's file under dir (a name has no dot).
func CAFile(dir, name string) string { return dir + "/" + name + ".pem" }

// writeBackendTLS writes be's TLS server settings, if it speaks TLS.
func writeBackendTLS(w func(...string), be *model.Backend, opts Options) {
	if be.TLS == nil {
		return
	}
	if !model.ValidBackendTLS(be.TLS) || opts.CertDir == "" || !be.TLS.NoVerify && !model.ValidFilePath(CAFile(opts.CertDir, be.TLS.CA)) ||
		be.TLS.Cert != "" && !model.ValidFilePath(CertFile(opts.CertDir, be.TLS.Cert)) {
		w("\thttp-request deny deny_status 503")
		return
	}
	w("\tdefault-server " + strings.Join(tlsServerOptions(be, opts), " "))
}

// tlsServerOptions are the server keywords of be's TLS settings, valid.
func tlsServerOptions(be *model.Backend, opts Options) []string {
	t := be.TLS
	out := []string{"ssl", "verify", "required", "ca-file", CAFile(opts.CertDir, t.CA)}
	if t.NoVerify {
		out = []string{"ssl", "verify", "none"} // an Ingress's proxy-ssl-verify off
	}
	if t.SNI != "" {
		out = append(out, "sni", "str("+t.SNI+")")
	}
	if host := cmp.Or(t.VerifyHost, t.SNI); host != "" && !t.NoVerify {
		out = append(out, "verifyhost", host)
	}
	// An Ingress's versions and ciphers (model.ValidBackendTLS checked them).
	for _, kw := range [][2]string{{"ssl-min-ver", t.MinVer}, {"ssl-max-ver", t.MaxVer}, {"ciphers", t.Ciphers}, {"ciphersuites", t.CipherSuites}} {
		if kw[1] != "" {
			out = append(out, kw[0], kw[1])
		}
	}
	if be.H2C {
		// HTTP/2 over TLS (an Ingress's GRPCS): servers such as gRPC's
		// want it negotiated.
		out = append(out, "alpn", "h2")
	}
	if t.Cert != "" {
		// The client certificate presented (a Gateway's backend one,
		// an Ingress's proxy-ssl-secret), and no TLS session resumed:
		// a resumed session carries the identity of the full handshake
		// it came from, and one stored by a handshake that straddled a
		// rotation's commit would go on presenting the old certificate
		// (runtimeapi/clientcerts.go).
		out = append(out, "crt", CertFile(opts.CertDir, t.Cert), "no-ssl-reuse")
	}
	return out
}

// RenewOptions are the keywords `add server` takes for a server of be, a
// backend speaking TLS with valid settings, created again at runtime
// (runtimeapi/renew.go): a server added at runtime inherits no
// default-server line, so it names the backend's TLS and check settings
// itself.
func RenewOptions(be *model.Backend, opts Options) []string {
	return append(ServerOptions(be), tlsServerOptions(be, opts)...)
}
