package runtimeapi

import (
	"context"
	"crypto/sha256"
	"maps"
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// CA files: a frontend's client CA (render/clientauth.go) and the CA of
// each backend that speaks TLS (render/backendtls.go), one file per
// bundle name in the certificate directory beside the certificates,
// written before a reload like them (certs.go: writeCerts) and removed
// once nothing names them (pruneCerts).
//
// A file the worker holds whose bundle changes (its name the same) is
// changed with no reload: `set ssl ca-file F <<PEM`, then `commit ssl
// ca-file F` (applyCAs); the file is written first, so a HAProxy that
// starts loads what is in force. HAProxy verifies with the committed
// bundle on the bind lines that name F and on the server lines that name
// F and present a client certificate (`crt`); a server line without
// `crt` keeps the bundle it was started with, though the commit answers
// Success (measured on 2.6.12, 3.0.11, 3.2.26 and 3.4.7: docs/gateway.md,
// "CA files at runtime"). The gateway therefore names the CA of such a
// backend by its digest (gateway/cafile.go): another bundle is another
// file, which only a reload (the server lines change) loads; and should
// a model keep the name of such a file with another bundle, the driver
// reloads (staleServerCAs) rather than commit what the servers would not
// use. A file the worker does not hold is a new name, which comes with a
// reload.

// casOf lists the CA files cfg's backends and frontends name, by path.
func casOf(dir string, cfg model.Config) map[string][]byte {
	out := map[string][]byte{}
	if dir == "" {
		return out
	}
	for _, f := range cfg.Frontends {
		if f.TLS != nil && model.ValidClientAuth(f.TLS.Client) {
			out[render.CAFile(dir, f.TLS.Client.CA)] = f.TLS.Client.CAPEM
		}
		for _, c := range hostClientAuths(f) {
			out[render.CAFile(dir, c.CA)] = c.CAPEM
		}
	}
	for _, b := range cfg.Backends {
		if model.ValidBackendTLS(b.TLS) {
			out[render.CAFile(dir, b.TLS.CA)] = b.TLS.CAPEM
			if b.TLS.Cert != "" {
				out[render.CertFile(dir, b.TLS.Cert)] = b.TLS.CertPEM // the client certificate (clientcerts.go)
			}
		}
	}
	return out
}

// clientCAsOf lists the client CA files of cfg's frontends, by path.
func clientCAsOf(dir string, cfg model.Config) map[string]bool {
	out := map[string]bool{}
	for _, f := range cfg.Frontends {
		if dir != "" && f.TLS != nil && model.ValidClientAuth(f.TLS.Client) {
			out[render.CAFile(dir, f.TLS.Client.CA)] = true
		}
		for _, c := range hostClientAuths(f) {
			if dir != "" {
				out[render.CAFile(dir, c.CA)] = true
			}
		}
	}
	return out
}

// staleServerCAs is why cfg needs a reload for its CA files: a file
// that a backend presenting no client certificate names, whose servers
// cannot be created again at runtime (renewable, renew.go), which the
// worker holds with another bundle (known: not after a restart of the
// controller, when the worker's bundles are unknown).
func (d *HAProxy) staleServerCAs(cfg model.Config) []string {
	dir := d.opts.Render.CertDir
	if dir == "" || !d.certs.known || d.certs.pid != d.pid {
		return nil
	}
	var why []string
	seen := map[string]bool{}
	for _, b := range cfg.Backends {
		if !model.ValidBackendTLS(b.TLS) || b.TLS.Cert != "" || renewable(b) {
			continue // renewable: its servers are created again (renew.go)
		}
		p := render.CAFile(dir, b.TLS.CA)
		old, held := d.certs.cas[p]
		if held && old != ([sha256.Size]byte{}) && old != sha256.Sum256(b.TLS.CAPEM) && !seen[p] {
			seen[p] = true
			why = append(why, "CA bundle of "+b.TLS.CA+" changed (servers presenting no client certificate take a CA only at a reload)")
		}
	}
	return why
}

// applyCAs commits to the worker the CA files of w it holds with
// another bundle, and creates the frontends' client CA files it does not
// hold (`new ssl ca-file`: a crt-list line added next may name one,
// render/clientauth.go); it returns how many commands it sent. The files
// of the backends presenting a client certificate, the certificate (no
// CA file of the worker's) and their CA files, are committed apart
// (clientcerts.go).
func (d *HAProxy) applyCAs(ctx context.Context, w certWant) (int, error) {
	n, err := d.applyClientFiles(ctx, w)
	if err != nil {
		return n, err
	}
	s := &d.certs
	var cmds []haproxy.Command
	var touched, created []string
	for _, p := range slices.Sorted(maps.Keys(w.cas)) {
		old, held := s.cas[p]
		switch {
		case w.clients.certs[p] || w.clients.cas[p]:
			continue
		case !held && w.clientCAs[p]:
			cmds = append(cmds, haproxy.Command{Line: "new ssl ca-file " + p})
			created = append(created, p)
		case !held || old == sha256.Sum256(w.cas[p]) || d.holdFront(w, p, old):
			continue
		default:
			touched = append(touched, p)
		}
		cmds = append(cmds, haproxy.Command{Line: "set ssl ca-file " + p, Payload: w.cas[p]},
			haproxy.Command{Line: "commit ssl ca-file " + p})
	}
	if len(cmds) == 0 {
		return n, nil
	}
	ans, err := d.rt.ExecCommands(ctx, cmds)
	if err == nil {
		err = committed(cmds, ans)
	}
	if err != nil {
		d.abortCAs(ctx, append(touched, created...))
		return n + len(cmds), err
	}
	for _, p := range append(touched, created...) {
		s.cas[p] = sha256.Sum256(w.cas[p])
	}
	s.renew = append(s.renew, touched...)
	d.log.Info("CA files changed without reload", "files", len(touched), "created", len(created))
	return n + len(cmds), nil
}

// abortCAs drops the CA transactions a failed step may have left open.
func (d *HAProxy) abortCAs(ctx context.Context, files []string) {
	cmds := make([]haproxy.Command, len(files))
	for i, p := range files {
		cmds[i] = haproxy.Command{Line: "abort ssl ca-file " + p}
	}
	_, _ = d.rt.ExecCommands(ctx, cmds) // "no transaction" for the committed ones
}

// heldCAs reads `show ssl ca-file`'s answer ("F - N certificate(s)",
// "*F ..." for a transaction open on F): the CA files under dir (ending
// in "/") the worker holds, their bundles unknown, and those with a
// transaction open.
func heldCAs(answer, dir string) (held map[string][sha256.Size]byte, open []string) {
	held = map[string][sha256.Size]byte{}
	for _, line := range strings.Split(answer, "\n") {
		f, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		p, pending := strings.CutPrefix(f, "*")
		if !strings.HasPrefix(p, dir) {
			continue
		}
		held[p] = [sha256.Size]byte{}
		if pending {
			open = append(open, p)
		}
	}
	return held, open
}

// digests is each file's digest of its content.
func digests(files map[string][]byte) map[string][sha256.Size]byte {
	out := make(map[string][sha256.Size]byte, len(files))
	for p, b := range files {
		out[p] = sha256.Sum256(b)
	}
	return out
}
