package runtimeapi

import (
	"context"
	"crypto/sha1" //nolint:gosec // HAProxy names a certificate by its SHA-1 fingerprint; compared, not trusted
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
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
// present the new certificate, with nothing created again (measured on
// 2.6.12 and 3.0.11: the server sees the new subject 4-5 ms after the
// commit); connections already open keep the one they were made with.
//
// Such servers resume no TLS session (`no-ssl-reuse` on their lines,
// render.tlsServerOptions). HAProxy keeps a server's last session per
// thread (2.9+ lends it to threads that have none) and resumes it on new
// connections, and a resumed session carries the identity of the full
// handshake it came from: the server sees the old subject. `commit ssl
// cert` empties that store (ssl_ckch.c, __ssl_sock_load_new_ckch_instance,
// 2.6 to 3.4 alike), but a connection whose handshake began before the
// commit stores its session after it, made with the old certificate, and
// every later connection resuming it (and the sessions the server issues
// on those) goes on with the old identity. Measured with the commit
// allowed on every version (TestBackendClientCertRotated with 20 more
// connections after each step, 2026-11-29): up to 18 of the 20 presented
// the old subject, resumed, until the next reload, in 16 of 20 runs on
// 3.0.11, 4 of 10 on 2.6.12 and 6 of 10 on 3.4.7 (what had kept 3.0-3.3
// on a reload, certCommitUnsure, was this); none with `no-ssl-reuse`.
// TestBackendClientCertNotResumed meets that race every run. Without the
// sessions, a commit is relied on with every version; the cost is a full
// handshake per new connection (BENCHMARKS.md).
//
// But never both kinds of commits to one worker: HAProxy without the fix
// of haproxy/haproxy#3165 (October 2025; not in Debian's 2.6.12) leaves
// the server instances a `commit ssl ca-file` rebuilt out of the
// certificate's list. Measured on 2.6.12: a certificate committed after
// the server's CA file was accepted and not used (the old subject went
// on), and the worker died at a commit after a certificate and a CA file
// had been committed, of either kind. So, for the backends presenting a
// client certificate, a worker that loaded the files at a reload of this
// driver takes commits of one kind: certificates, or their CA files
// (commits); the other kind, or both at once, is a reload
// (staleClientFiles), after which the count starts again. After a
// restart of the controller what the worker took is not known: a file
// whose content is not known is compared with what the worker holds by
// the SHA-1 fingerprints HAProxy prints (`show ssl cert F`, `show ssl
// ca-file F`), kept when the same, and a reload when not, as is any
// change until the next reload.

// clientFiles are the files of the backends presenting a client
// certificate, by path: their certificates and their CA files (each
// also in casOf's list).
type clientFiles struct {
	certs, cas map[string]bool
}

// certCommits is what a worker took of the clientFiles at runtime since
// it loaded them from the files at a reload of this driver (pid).
type certCommits struct {
	pid string
	// back: the backends presenting a client certificate; front: the
	// frontends verifying their clients (frontcommits.go).
	back, front commitKinds
}

// commitKinds is which kinds of file a worker took commits of.
type commitKinds struct{ certs, cas bool }

// may reports whether a file of the kind cert (else a CA file) may be
// committed: not when the worker took the other kind.
func (k commitKinds) may(cert bool) bool {
	if cert {
		return !k.cas
	}
	return !k.certs
}

// took notes that the worker takes commits of these kinds.
func (k *commitKinds) took(certs, cas bool) {
	k.certs = k.certs || certs
	k.cas = k.cas || cas
}

// loadedHere reports whether the running worker was loaded at a reload
// of this driver, so that what it took is known.
func (c certCommits) loadedHere(pid string) bool { return pid != "" && c.pid == pid }

// clientFilesOf lists the clientFiles of cfg.
func clientFilesOf(dir string, cfg model.Config) clientFiles {
	out := clientFiles{certs: map[string]bool{}, cas: map[string]bool{}}
	if dir == "" {
		return out
	}
	for _, b := range cfg.Backends {
		if model.ValidBackendTLS(b.TLS) && b.TLS.Cert != "" {
			out.certs[render.CertFile(dir, b.TLS.Cert)] = true
			if !b.TLS.NoVerify {
				out.cas[render.CAFile(dir, b.TLS.CA)] = true
			}
		}
	}
	return out
}

// anotherFile stands for the digest of a file the worker holds that is
// known to differ from the one wanted.
var anotherFile = sha256.Sum256([]byte("(another content)"))

// mayCommit reports whether a file of the kind cert (else a CA file) of
// the clientFiles may be committed to the running worker.
func (d *HAProxy) mayCommit(cert bool) bool {
	if !d.commits.loadedHere(d.pid) {
		return false // not loaded at a reload of this driver: not known
	}
	return d.commits.back.may(cert)
}

// staleClientFiles is why cfg needs a reload for the clientFiles: files
// the worker holds with another content that may not be committed to it
// (mayCommit), or a certificate and a CA file both changed.
func (d *HAProxy) staleClientFiles(cfg model.Config) []string {
	dir := d.opts.Render.CertDir
	if dir == "" || !d.certs.known || d.certs.pid != d.pid {
		return nil
	}
	differs := func(p string, body []byte) bool {
		old, held := d.certs.cas[p]
		return held && old != ([sha256.Size]byte{}) && old != sha256.Sum256(body)
	}
	var certs, cas []string
	for _, b := range cfg.Backends {
		if !model.ValidBackendTLS(b.TLS) || b.TLS.Cert == "" {
			continue
		}
		if p := render.CertFile(dir, b.TLS.Cert); differs(p, b.TLS.CertPEM) && !slices.Contains(certs, p) {
			certs = append(certs, p)
		}
		if p := render.CAFile(dir, b.TLS.CA); !b.TLS.NoVerify && differs(p, b.TLS.CAPEM) && !slices.Contains(cas, p) {
			cas = append(cas, p)
		}
	}
	return oneKind(certs, cas, d.mayCommit, "backend client certificate files")
}

// oneKind is why a reload is needed when the certificates certs and the
// CA files cas changed: both kinds at once, or a kind the worker may not
// take (may, haproxy/haproxy#3165); what names the files.
func oneKind(certs, cas []string, may func(cert bool) bool, what string) []string {
	switch {
	case len(certs) > 0 && len(cas) > 0:
	case len(certs) > 0 && !may(true):
	case len(cas) > 0 && !may(false):
	default:
		return nil
	}
	return []string{fmt.Sprintf("%s changed (%s) that this worker may not take at runtime (haproxy/haproxy#3165)",
		what, strings.Join(append(certs, cas...), ", "))}
}

// applyClientFiles commits to the worker the clientFiles of w whose
// content differs from what it holds, when it may (mayCommit), and
// returns how many commands it sent. A file the worker holds with a
// content not known (read back after a restart) is compared by its
// fingerprints; one it does not hold is new, and comes with the reload
// of the server lines naming it.
func (d *HAProxy) applyClientFiles(ctx context.Context, w certWant) (int, error) {
	s := &d.certs
	sent := 0
	var cmds []haproxy.Command
	var certs, cas []string
	for _, p := range slices.Sorted(maps.Keys(w.cas)) {
		cert, ca := w.clients.certs[p], w.clients.cas[p]
		if !cert && !ca {
			continue
		}
		old, held := s.cas[p]
		if _, ok := s.files[p]; ok && cert {
			// `show ssl cert` listed it (readCerts): a server's, no
			// frontend's, which applyCerts would delete as unused.
			held = true
			delete(s.files, p)
		}
		sum := sha256.Sum256(w.cas[p])
		if !held || old == sum {
			continue
		}
		if old == ([sha256.Size]byte{}) {
			same, err := d.holds(ctx, p, cert, w.cas[p])
			sent++
			if err != nil {
				return sent, err
			}
			if same {
				s.cas[p] = sum
				continue
			}
			s.cas[p] = anotherFile
		}
		if !d.mayCommit(cert) {
			d.clientFilesStale = true // the next pass reloads (againForClientFiles)
			continue
		}
		if cert {
			certs = append(certs, p)
			cmds = append(cmds, haproxy.Command{Line: "set ssl cert " + p, Payload: w.cas[p]}, haproxy.Command{Line: "commit ssl cert " + p})
		} else {
			cas = append(cas, p)
			cmds = append(cmds, haproxy.Command{Line: "set ssl ca-file " + p, Payload: w.cas[p]}, haproxy.Command{Line: "commit ssl ca-file " + p})
		}
	}
	if len(certs) > 0 && len(cas) > 0 {
		d.clientFilesStale = true // both kinds: a reload (staleClientFiles)
		return sent, nil
	}
	if len(cmds) == 0 {
		return sent, nil
	}
	d.commits.back.took(len(certs) > 0, len(cas) > 0)
	ans, err := d.rt.ExecCommands(ctx, cmds)
	sent += len(cmds)
	if err == nil {
		err = committed(cmds, ans)
	}
	if err != nil {
		d.abortCerts(ctx, certs)
		d.abortCAs(ctx, cas)
		return sent, err
	}
	for _, p := range append(certs, cas...) {
		s.cas[p] = sha256.Sum256(w.cas[p])
	}
	d.log.Info("backend client certificate files changed without reload", "certificates", len(certs), "ca_files", len(cas))
	return sent, nil
}

// againForClientFiles has the loop come back when a pass found a file it
// may not commit (applyClientFiles): the next pass reloads for it. The
// flag stays until then (owed.go): that pass may change no server.
func (d *HAProxy) againForClientFiles(res *driver.Result) {
	if d.clientFilesStale {
		if res.Again == 0 {
			res.Again = renewPoll
		}
	}
}

// holds reports whether the worker's store p holds the certificates of
// bundle, by the SHA-1 fingerprints `show ssl cert p` (cert: the leaf,
// the bundle's first) or `show ssl ca-file p` (each of them) prints.
func (d *HAProxy) holds(ctx context.Context, p string, cert bool, bundle []byte) (bool, error) {
	line := "show ssl ca-file " + p
	if cert {
		line = "show ssl cert " + p
	}
	ans, err := d.rt.ExecCommands(ctx, []haproxy.Command{{Line: line}})
	if err != nil {
		return false, err
	}
	var want []string
	for rest := bundle; ; {
		blk, r := pem.Decode(rest)
		if blk == nil {
			break
		}
		rest = r
		if blk.Type != "CERTIFICATE" {
			continue
		}
		sum := sha1.Sum(blk.Bytes) //nolint:gosec // see the import
		want = append(want, strings.ToUpper(hex.EncodeToString(sum[:])))
		if cert {
			break
		}
	}
	got := certFingerprints(ans[0])
	return len(want) > 0 && slices.Equal(got, want), nil
}

// certFingerprints reads the "SHA1 FingerPrint:" lines of `show ssl cert
// F` or `show ssl ca-file F`, in order, upper case.
func certFingerprints(answer string) []string {
	var out []string
	for _, line := range strings.Split(answer, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "SHA1 FingerPrint:"); ok {
			out = append(out, strings.ToUpper(strings.TrimSpace(v)))
		}
	}
	return out
}
