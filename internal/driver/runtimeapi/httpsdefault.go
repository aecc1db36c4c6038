package runtimeapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"sync"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// The fixed HTTPS listener's default certificate (render/httpslistener.go):
// its crt-list's first line, which HAProxy needs to start the bind and
// never serves for a name another line has (`!*`). The controller makes
// it: a self-signed ECDSA certificate for no name of ours
// (listenerDefaultName), kept in its file, so a restarted controller or
// HAProxy finds the same one; a file that does not parse is replaced.

// listenerDefaultName is the default certificate's only name: a reserved
// one (RFC 6761), which no client asks for.
const listenerDefaultName = "default.haproxy-k8s-sync.invalid"

var listenerDefaults sync.Map // certificate directory: PEM

// ListenerDefaultCert is the fixed HTTPS listener's default certificate
// under dir: its file's content when that parses, else a new one
// written there (0600).
func ListenerDefaultCert(dir string) ([]byte, error) {
	if v, ok := listenerDefaults.Load(dir); ok {
		return v.([]byte), nil
	}
	path := render.DefaultCertFile(dir, render.HTTPSListenerFrontend)
	if b, err := os.ReadFile(path); err == nil {
		if _, err := certs.Parse(b, b, time.Now()); err == nil {
			listenerDefaults.Store(dir, b)
			return b, nil
		}
	}
	b, err := newListenerDefault(time.Now())
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("certificate directory: %w", err)
	}
	if err := atomicfile.Write(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("certificate directory: %w", err)
	}
	listenerDefaults.Store(dir, b)
	return b, nil
}

// newListenerDefault makes the default certificate, valid 100 years from
// an hour before now, as certs.Parse orders a bundle.
func newListenerDefault(now time.Time) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: listenerDefaultName},
		DNSNames: []string{listenerDefaultName}, NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(100, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	b, err := certs.Parse(certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), now)
	if err != nil {
		return nil, err
	}
	return b.PEM, nil
}

// httpsListenerCerts adds to w what the fixed HTTPS listener needs beside
// its crt-list: the default certificate's file.
func httpsListenerCerts(o render.Options, w *certWant) error {
	if !o.HTTPSListener() {
		return nil
	}
	pem, err := ListenerDefaultCert(o.CertDir)
	if err != nil {
		return err
	}
	w.files[render.DefaultCertFile(o.CertDir, render.HTTPSListenerFrontend)] = pem
	return nil
}

// frontCerts adds the files of f, which terminates TLS, to w: its
// default certificate's copy (the fixed HTTPS listener's is the
// controller's: httpsdefault.go), its certificates, its crt-list.
func frontCerts(opts render.Options, f model.Frontend, w *certWant) {
	dir := opts.CertDir
	if def := f.TLS.Cert(f.TLS.Default); def != nil {
		w.files[render.DefaultCertFile(dir, f.Name)] = def.PEM
	}
	for _, c := range f.TLS.Certificates {
		if model.ValidCertName(c.Name) {
			w.files[render.CertFile(dir, c.Name)] = c.PEM
		}
	}
	w.lists[render.CrtListFile(dir, f.Name)] = render.CrtListEntries(opts, f)
}

// RunningHTTPS is what the fixed HTTPS listener's files on disk say it
// serves (render.RunningHTTPSOf: its map's frontends, its crt-list's
// names): where a restarted controller's first-come claims start
// (render.HTTPSHolds), so that it converges to what runs. Nothing known
// without the listener or its files (a fresh HAProxy: name order); an
// error only when a file exists and cannot be read.
func RunningHTTPS(o render.Options) (render.RunningHTTPS, error) {
	if !o.HTTPSListener() {
		return render.RunningHTTPS{}, nil
	}
	var bs [2][]byte
	for i, p := range []string{render.HTTPSListenerMapFile(o.ACLDir), render.CrtListFile(o.CertDir, render.HTTPSListenerFrontend)} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return render.RunningHTTPS{}, fmt.Errorf("HTTPS listener's files: %w", err)
		}
		bs[i] = b
	}
	return render.RunningHTTPSOf(o.CertDir, bs[0], bs[1]), nil
}
