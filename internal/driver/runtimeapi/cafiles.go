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

// CA files of the backends that speak TLS (render/backendtls.go): one
// file per CA in the certificate directory beside the certificates,
// written before a reload like them (certs.go). A CA whose contents
// change while the backends naming it run is changed in the worker with
// `set ssl ca-file F <<PEM` and `commit ssl ca-file F` (HAProxy 2.5+):
// the connections opened after the commit verify against the new bundle,
// with no reload. A new CA file comes with a new server line, so with a
// reload, which loads it from the file.

// casOf lists the CA files cfg's backends name, by path.
func casOf(dir string, cfg model.Config) map[string][]byte {
	out := map[string][]byte{}
	if dir == "" {
		return out
	}
	for _, b := range cfg.Backends {
		if model.ValidBackendTLS(b.TLS) {
			out[render.CAFile(dir, b.TLS.CA)] = b.TLS.CAPEM
		}
	}
	return out
}

// digests are the SHA-256 digests of files' contents, by path.
func digests(files map[string][]byte) map[string][sha256.Size]byte {
	out := make(map[string][sha256.Size]byte, len(files))
	for p, b := range files {
		out[p] = sha256.Sum256(b)
	}
	return out
}

// applyCAs sets and commits in the worker every CA file of w whose
// contents differ from what it holds (as d.certs knows it; unknown after
// a worker the driver did not start: every one is set). A refused commit
// fails the pass; the worker keeps the bundle it had.
func (d *HAProxy) applyCAs(ctx context.Context, w certWant) (int, error) {
	s := &d.certs
	if s.cas == nil {
		s.cas = map[string][sha256.Size]byte{}
	}
	var cmds []haproxy.Command
	var touched []string
	for _, p := range slices.Sorted(maps.Keys(w.cas)) {
		if old, ok := s.cas[p]; ok && old == sha256.Sum256(w.cas[p]) {
			continue
		}
		cmds = append(cmds, haproxy.Command{Line: "set ssl ca-file " + p, Payload: w.cas[p]},
			haproxy.Command{Line: "commit ssl ca-file " + p})
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
		abort := make([]haproxy.Command, len(touched))
		for i, p := range touched {
			abort[i] = haproxy.Command{Line: "abort ssl ca-file " + p}
		}
		_, _ = d.rt.ExecCommands(ctx, abort)
		return len(cmds), err
	}
	for _, p := range touched {
		s.cas[p] = sha256.Sum256(w.cas[p])
	}
	return len(cmds), nil
}
