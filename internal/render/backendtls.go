package render

import (
	"cmp"

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
	t := be.TLS
	line := "\tdefault-server ssl verify required ca-file " + CAFile(opts.CertDir, t.CA)
	if t.NoVerify {
		line = "\tdefault-server ssl verify none" // an Ingress's proxy-ssl-verify off
	}
	if t.SNI != "" {
		line += " sni str(" + t.SNI + ")"
	}
	if host := cmp.Or(t.VerifyHost, t.SNI); host != "" && !t.NoVerify {
		line += " verifyhost " + host
	}
	if be.H2C {
		// HTTP/2 over TLS (an Ingress's GRPCS): servers such as gRPC's
		// want it negotiated.
		line += " alpn h2"
	}
	if be.TLS.Cert != "" {
		// The client certificate presented (a Gateway's backend one).
		line += " crt " + CertFile(opts.CertDir, be.TLS.Cert)
	}
	w(line)
}
