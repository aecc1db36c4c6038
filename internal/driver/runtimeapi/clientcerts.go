package runtimeapi

import (
	"bytes"
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
// Unless a CA file was committed to that worker before: HAProxy before
// the fix of haproxy/haproxy#3165 (October 2025, not in Debian's 2.6.12)
// leaves the server instances a CA commit rebuilt out of the
// certificate's list, and a certificate committed afterwards leaves them
// pointing at a freed store: measured on 2.6.12, the worker died at the
// next commit. So a certificate is committed only to a worker that
// loaded the files at a reload of this driver and took no CA commit
// since (caFree); otherwise its rotation is a reload (staleClientCerts).
// After a restart of the controller the worker's history is not known:
// a certificate whose content is not known is compared by its SHA-1
// fingerprint (`show ssl cert F`), and one that differs is a reload.

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

// anotherCert stands for the digest of a certificate the worker holds
// that is known to differ from the file's.
var anotherCert = sha256.Sum256([]byte("(another certificate)"))

// caFree reports whether a client certificate may be committed to the
// running worker: it loaded the files at a reload of this driver, and no
// CA file was committed to it since.
func (d *HAProxy) caFree() bool { return d.pid != "" && d.caFreePid == d.pid }

// staleClientCerts is why cfg needs a reload for its client
// certificates: a file the worker holds with another content, which may
// not be committed to it (caFree).
func (d *HAProxy) staleClientCerts(cfg model.Config) []string {
	dir := d.opts.Render.CertDir
	if dir == "" || !d.certs.known || d.certs.pid != d.pid || d.caFree() {
		return nil
	}
	var why []string
	for _, b := range cfg.Backends {
		if !model.ValidBackendTLS(b.TLS) || b.TLS.Cert == "" {
			continue
		}
		p := render.CertFile(dir, b.TLS.Cert)
		old, held := d.certs.cas[p]
		if held && old != ([sha256.Size]byte{}) && old != sha256.Sum256(b.TLS.CertPEM) && !slices.Contains(why, p) {
			why = append(why, p)
		}
	}
	if len(why) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("backend client certificate %s changed on a worker that took a CA commit (haproxy/haproxy#3165)", strings.Join(why, ", "))}
}

// applyClientCerts commits to the worker the client certificates of w
// whose content differs from what it holds, when it may (caFree), and
// returns how many commands it sent. A certificate the worker holds with
// a content not known (read back after a restart) is compared by its
// fingerprint; one it does not hold is new, and comes with the reload of
// the server lines naming it.
func (d *HAProxy) applyClientCerts(ctx context.Context, w certWant) (int, error) {
	s := &d.certs
	var cmds []haproxy.Command
	var touched []string
	sent, stale := 0, false
	for _, p := range slices.Sorted(maps.Keys(w.clients)) {
		old, held := s.cas[p]
		if _, ok := s.files[p]; ok {
			held = true // `show ssl cert` listed it (readCerts)
		}
		sum := sha256.Sum256(w.cas[p])
		if !held || old == sum {
			continue
		}
		if old == ([sha256.Size]byte{}) {
			same, err := d.holdsCert(ctx, p, w.cas[p])
			sent++
			if err != nil {
				return sent, err
			}
			if same {
				s.cas[p] = sum
				continue
			}
			s.cas[p] = anotherCert
		}
		if !d.caFree() {
			stale = true
			continue
		}
		cmds = append(cmds, haproxy.Command{Line: "set ssl cert " + p, Payload: w.cas[p]},
			haproxy.Command{Line: "commit ssl cert " + p})
		touched = append(touched, p)
	}
	if len(cmds) > 0 {
		ans, err := d.rt.ExecCommands(ctx, cmds)
		sent += len(cmds)
		if err == nil {
			err = committed(cmds, ans)
		}
		if err != nil {
			d.abortCerts(ctx, touched)
			return sent, err
		}
		for _, p := range touched {
			s.cas[p] = sha256.Sum256(w.cas[p])
		}
		d.log.Info("backend client certificates changed without reload", "files", len(touched))
	}
	// Found only now (read back): the pass asks to come back, and the
	// next one reloads (staleClientCerts, againForClientCerts).
	d.clientCertsStale = d.clientCertsStale || stale
	return sent, nil
}

// againForClientCerts has the loop come back when a pass found a client
// certificate it may not commit (applyClientCerts): the next pass
// reloads for it.
func (d *HAProxy) againForClientCerts(res *driver.Result) {
	if d.clientCertsStale {
		d.clientCertsStale = false
		if res.Again == 0 {
			res.Again = renewPoll
		}
	}
}

// holdsCert reports whether the worker's certificate store p holds the
// leaf certificate of bundle (the first PEM block), by the SHA-1
// fingerprint `show ssl cert p` prints.
func (d *HAProxy) holdsCert(ctx context.Context, p string, bundle []byte) (bool, error) {
	ans, err := d.rt.ExecCommands(ctx, []haproxy.Command{{Line: "show ssl cert " + p}})
	if err != nil {
		return false, err
	}
	blk, _ := pem.Decode(bundle)
	if blk == nil {
		return false, nil
	}
	want := sha1.Sum(blk.Bytes) //nolint:gosec // see the import
	return bytes.EqualFold([]byte(certFingerprint(ans[0])), []byte(hex.EncodeToString(want[:]))), nil
}

// certFingerprint reads the "SHA1 FingerPrint:" line of `show ssl cert
// F`'s answer ("" when there is none).
func certFingerprint(answer string) string {
	for _, line := range strings.Split(answer, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "SHA1 FingerPrint:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
