package runtimeapi

import (
	"context"
	"crypto/sha256"
	"maps"
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// A backend's client certificate (model.BackendTLS.Cert: a Gateway's
// backend client certificate, an Ingress's proxy-ssl-secret), presented
// to its servers by the `crt` of their server lines, is named for its
// Secret: a rotation keeps the name, so the server lines, and the
// structure, stay. The file is written like the CA files (casOf lists
// it, so writeCerts writes it and pruneCerts keeps it) and a file the
// worker holds whose content changed is changed at runtime: `set ssl
// cert F <<PEM`, `commit ssl cert F`. The servers' next connections
// present the new certificate, with no reload and nothing created again
// (measured on 2.6.12 and 3.0.11: the server sees the new subject within
// milliseconds of the commit, TestBackendClientCertRotated); connections
// already open keep the one they were made with.

// clientCertsOf lists the files of the client certificates cfg's
// backends present, by path (each also in casOf's list).
func clientCertsOf(dir string, cfg model.Config) map[string]bool {
	out := map[string]bool{}
	if dir == "" {
		return out
	}
	for _, b := range cfg.Backends {
		if model.ValidBackendTLS(b.TLS) && b.TLS.Cert != "" {
			out[render.CertFile(dir, b.TLS.Cert)] = true
		}
	}
	return out
}

// applyClientCerts commits to the worker the client certificates of w
// whose content differs from what it holds, and returns how many
// commands it sent. A certificate the worker holds with a content not
// known (read back after a restart) is set again; one it does not hold
// is new, and comes with the reload of the server lines naming it.
func (d *HAProxy) applyClientCerts(ctx context.Context, w certWant) (int, error) {
	s := &d.certs
	var cmds []haproxy.Command
	var touched []string
	for _, p := range slices.Sorted(maps.Keys(w.clients)) {
		old, held := s.cas[p]
		if _, ok := s.files[p]; ok {
			held = true // `show ssl cert` listed it (readCerts)
		}
		if !held || old == sha256.Sum256(w.cas[p]) {
			continue
		}
		cmds = append(cmds, haproxy.Command{Line: "set ssl cert " + p, Payload: w.cas[p]},
			haproxy.Command{Line: "commit ssl cert " + p})
		touched = append(touched, p)
	}
	if len(cmds) == 0 {
		return 0, nil
	}
	ans, err := d.rt.ExecCommands(ctx, cmds)
	if err == nil {
		err = committed(cmds, ans)
	}
	if err != nil {
		d.abortCerts(ctx, touched)
		return len(cmds), err
	}
	for _, p := range touched {
		s.cas[p] = sha256.Sum256(w.cas[p])
	}
	d.log.Info("backend client certificates changed without reload", "files", len(touched))
	return len(cmds), nil
}
