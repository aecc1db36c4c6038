package runtimeapi

import (
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// CA files of the backends that speak TLS (render/backendtls.go): one
// file per CA bundle in the certificate directory beside the
// certificates, written before a reload like them (certs.go: writeCerts)
// and removed once no backend names them (pruneCerts). A bundle's name
// carries the digest of its contents (gateway/backendtls.go), so a CA
// that changes is a new file and a reload, which loads it. Measured on
// HAProxy 2.6.12: after `set ssl ca-file` and `commit ssl ca-file` (both
// answered Success) of the CA that signed the server's certificate in
// place of one that did not, the backend's requests still failed 10 s
// later (the server logged a failed handshake for each), so the Runtime
// API does not carry the change to server lines there.

// casOf lists the CA files cfg's backends and frontends name, by path.
func casOf(dir string, cfg model.Config) map[string][]byte {
	out := map[string][]byte{}
	if dir == "" {
		return out
	}
	for _, f := range cfg.Frontends {
		if f.TLS != nil && model.ValidClientAuth(f.TLS.Client) {
			// A frontend's client CA (render/clientauth.go): named by
			// its digest too, so a new CA is a new file and a reload.
			out[render.CAFile(dir, f.TLS.Client.CA)] = f.TLS.Client.CAPEM
		}
	}
	for _, b := range cfg.Backends {
		if model.ValidBackendTLS(b.TLS) {
			out[render.CAFile(dir, b.TLS.CA)] = b.TLS.CAPEM
			if b.TLS.Cert != "" {
				out[render.CertFile(dir, b.TLS.Cert)] = b.TLS.CertPEM // the client certificate, named by its digest too
			}
		}
	}
	return out
}
