package gateway

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Which CA bundles HAProxy can take at runtime (docs/gateway.md, "CA files
// at runtime", measured on 2.6.12, 3.0.11, 3.2.26 and 3.4.7): the
// driver replaces a CA file's contents with `set ssl ca-file` and
// `commit ssl ca-file` when its name stays and its bundle changes, and
// HAProxy then verifies with the new bundle
//   - on a bind line (a frontend's client CA, clientauth.go), for every
//     handshake after the commit;
//   - on a server line only when the server also presents a client
//     certificate (`crt`): a server without one keeps verifying with the
//     CA it was started with, though the commit answers Success.
// So a frontend's client CA, and a BackendTLSPolicy's CA on the backends
// of a Gateway with a backend client certificate, are named for what
// they verify (the port; the policy) and change without a reload; the
// CA of a backend presenting no certificate is named by its digest as
// well (caByDigest), so another bundle is another file and a reload.

// caByDigest is t with its CA file named by the digest of its bundle
// too: a backend whose servers present no client certificate.
func caByDigest(t *model.BackendTLS) *model.BackendTLS {
	if t == nil || t.Cert != "" {
		return t
	}
	sum := sha256.Sum256(t.CAPEM)
	u := *t
	u.CA = model.Name(t.CA, hex.EncodeToString(sum[:6]))
	return &u
}
