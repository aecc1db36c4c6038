package runtimeapi

import (
	"crypto/sha256"
	"iter"
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// The frontend side of haproxy/haproxy#3165 (clientcerts.go has the
// backend side). A frontend verifying its clients (AllowValidOnly,
// render/clientauth.go) names its CA file on its crt-list lines; a
// `commit ssl ca-file F` rebuilds the instances of those lines and,
// without the fix (Debian's 2.6.12 and 3.0.11), leaves them out of their
// certificate's list. Measured (TestFrontendCertAndCAFileCommits): a
// certificate of such a line committed after F's commit is accepted and
// not served (the old subject goes on), and the worker dies at the next
// commit of F; 3.4.7 serves every step. So the same rule as the
// backends': a worker loaded at a reload of this driver takes commits of
// one kind for these files, the certificates of verifying frontends'
// lines or their CA files; the other kind, or both in one pass, is one
// reload (staleFrontFiles), after which the count starts again. A
// host's own verifying line (an Ingress's auth-tls-*, Certificate.Client)
// is such a line too, with its CA file.
//
// Not covered: after a restart of the controller the worker's contents
// are not known (zero digests, readCerts) and a file is set again as
// before, blindly (the backends compare fingerprints, holds).

// frontClientFilesOf lists, by path, the certificates of the crt-list
// lines verifying their clients (a frontend's, or a host's own), and
// their CA files.
func frontClientFilesOf(opts render.Options, cfg model.Config) clientFiles {
	dir := opts.CertDir
	out := clientFiles{certs: map[string]bool{}, cas: map[string]bool{}}
	if dir == "" {
		return out
	}
	for f := range verifyingFronts(opts, cfg) {
		for _, v := range verifyingLines(f) {
			out.cas[render.CAFile(dir, v.ca.CA)] = true
			if v.cert != nil {
				out.certs[render.CertFile(dir, v.cert.Name)] = true
			}
		}
	}
	return out
}

// verifyingFronts yields cfg's frontends that terminate TLS and, with
// the fixed HTTPS listener, its own: its lines verify for the frontends
// behind it, their certificates under names of their own
// (render.ListenerCertName). By pointer, cfg's frontends not copied: a
// pass asks twice, and appending the listener's frontend to a copy of
// 10,000 Services' frontends was ~3 MB each time, half of what a new
// Service's pass allocated (BENCHMARKS.md, issue 29).
func verifyingFronts(opts render.Options, cfg model.Config) iter.Seq[*model.Frontend] {
	return func(yield func(*model.Frontend) bool) {
		for i := range cfg.Frontends {
			if f := &cfg.Frontends[i]; f.TLS != nil && !yield(f) {
				return
			}
		}
		if fixed, _, ok := render.HTTPSListenerFront(cfg, opts); ok {
			yield(&fixed)
		}
	}
}

// verifyingLine is a client CA file a frontend's crt-list lines verify
// with, and the certificate of one such line (nil: the CA alone).
type verifyingLine struct {
	ca   *model.ClientAuth
	cert *model.Certificate
}

// verifyingLines lists f's lines that verify their clients: every
// certificate's when the frontend verifies (TLS.Client), and a host's
// own (Certificate.Client, an Ingress's auth-tls-*) with its CA file.
func verifyingLines(f *model.Frontend) []verifyingLine {
	if f.TLS == nil {
		return nil
	}
	var out []verifyingLine
	front := model.ValidClientAuth(f.TLS.Client)
	if front {
		out = append(out, verifyingLine{ca: f.TLS.Client})
	}
	for i := range f.TLS.Certificates {
		c := &f.TLS.Certificates[i]
		if !model.ValidCertName(c.Name) {
			continue
		}
		switch {
		case model.ValidClientAuth(c.Client):
			out = append(out, verifyingLine{ca: c.Client, cert: c})
		case front:
			out = append(out, verifyingLine{ca: f.TLS.Client, cert: c})
		}
	}
	return out
}

// mayCommitFront reports whether a file of the kind cert (else a CA
// file) of the frontFiles may be committed to the running worker.
func (d *HAProxy) mayCommitFront(cert bool) bool {
	return d.commits.loadedHere(d.pid) && d.commits.front.may(cert)
}

// frontChanged is whether the worker holds the file p, its content
// known, with another content than body.
func (d *HAProxy) frontChanged(held map[string][sha256.Size]byte, p string, body []byte) bool {
	old, ok := held[p]
	return ok && old != ([sha256.Size]byte{}) && old != sha256.Sum256(body)
}

// staleFrontFiles is why cfg needs a reload for the frontFiles: a
// certificate of a verifying line or a client CA file changed that the
// worker may not take (mayCommitFront), or both kinds changed.
func (d *HAProxy) staleFrontFiles(cfg model.Config) []string {
	dir := d.opts.Render.CertDir
	if dir == "" || !d.certs.known || d.certs.pid != d.pid {
		return nil
	}
	var certs, cas []string
	for f := range verifyingFronts(d.opts.Render, cfg) {
		for _, v := range verifyingLines(f) {
			if p := render.CAFile(dir, v.ca.CA); d.frontChanged(d.certs.cas, p, v.ca.CAPEM) && !slices.Contains(cas, p) {
				cas = append(cas, p)
			}
			if v.cert == nil {
				continue
			}
			if p := render.CertFile(dir, v.cert.Name); d.frontChanged(d.certs.files, p, v.cert.PEM) && !slices.Contains(certs, p) {
				certs = append(certs, p)
			}
		}
	}
	return oneKind(certs, cas, d.mayCommitFront, "certificates or client CA files of verifying frontends") // clientcerts.go
}

// holdFront reports whether the file p of the frontFiles of w, held with
// the known content old, must not be committed now (mayCommitFront):
// the pass leaves it and the next one reloads (againForClientFiles).
// Otherwise it notes that the worker takes a commit of its kind.
func (d *HAProxy) holdFront(w certWant, p string, old [sha256.Size]byte) bool {
	cert, ca := w.front.certs[p], w.front.cas[p]
	if (!cert && !ca) || old == ([sha256.Size]byte{}) {
		return false
	}
	if !d.mayCommitFront(cert) {
		d.clientFilesStale = true
		return true
	}
	d.commits.front.took(cert, ca)
	return false
}
