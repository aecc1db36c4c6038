package runtimeapi

import (
	"bytes"
	"net/netip"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// TestListenerDefaultCert: the fixed HTTPS listener's default certificate
// is made once, kept in its file (a restarted controller, the cache
// empty, serves the same one), for no name of a user's, and made anew
// when the file does not parse.
func TestListenerDefaultCert(t *testing.T) {
	dir := t.TempDir()
	first, err := ListenerDefaultCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := certs.Parse(first, first, time.Now())
	if err != nil {
		t.Fatalf("the default certificate does not parse: %v", err)
	}
	if !slices.Equal(b.Names, []string{listenerDefaultName}) {
		t.Errorf("names %v, want %s", b.Names, listenerDefaultName)
	}
	path := render.DefaultCertFile(dir, render.HTTPSListenerFrontend)
	if onDisk, _ := os.ReadFile(path); !bytes.Equal(onDisk, first) {
		t.Error("the file does not hold the certificate")
	}
	listenerDefaults.Delete(dir) // a restarted controller
	if again, _ := ListenerDefaultCert(dir); !bytes.Equal(again, first) {
		t.Error("a restarted controller made another default certificate")
	}
	listenerDefaults.Delete(dir)
	if err := os.WriteFile(path, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fresh, err := ListenerDefaultCert(dir); err != nil || bytes.Equal(fresh, first) || bytes.Equal(fresh, []byte("junk")) {
		t.Errorf("a file that does not parse was kept (%v)", err)
	}
}

// TestCertsOfHTTPSListener: with the fixed HTTPS listener, a shared
// frontend's certificates are lines of the listener's one crt-list (after
// the controller's default line), not a crt-list of its own, a frontend
// verifying its clients (AllowValidOnly) on a line verifying under a name
// of its own; a frontend that cannot share it (the fallback) keeps its
// own; with none
// shared, the listener's files alone count as no certificate work
// (none: the growth reload's aside passes go on).
func TestCertsOfHTTPSListener(t *testing.T) {
	dir := t.TempDir()
	o := render.Options{ACLDir: dir + "/acl", CertDir: dir + "/certs",
		Listeners: render.Listeners{Mode: render.ListenersTProxy, HTTP: true}}
	gw := func(name, addr, host string) model.Frontend {
		c := model.Certificate{Name: "cert_" + name, SNI: []string{host}, PEM: []byte(name)}
		return model.Frontend{Name: name, Binds: []model.Bind{{Addr: netip.MustParseAddr(addr), Port: 443, Transparent: true}},
			HTTP: model.Shaped(&model.HTTP{Listeners: []string{host}}), TLS: &model.TLS{Certificates: []model.Certificate{c}, Default: c.Name, ALPN: []string{"h2", "http/1.1"}}}
	}
	shared := gw("gw_a", "203.0.113.10", "a.example.com")
	own := gw("gw_b", "203.0.113.11", "b.example.com")
	own.TLS.Client = &model.ClientAuth{CA: "ca_x", CAPEM: []byte("ca"), Optional: true}
	verifying := gw("gw_c", "203.0.113.12", "c.example.com")
	verifying.TLS.Client = &model.ClientAuth{CA: "ca_y", CAPEM: []byte("ca")}
	list := render.CrtListFile(o.CertDir, render.HTTPSListenerFrontend)

	w := certsOf(o, model.Config{Frontends: []model.Frontend{shared, own, verifying}})
	var lines []string
	for _, e := range w.lists[list] {
		lines = append(lines, e.Line())
	}
	want := []string{render.DefaultCertFile(o.CertDir, render.HTTPSListenerFrontend) + " !*", render.CertFile(o.CertDir, "cert_gw_a") + " a.example.com",
		render.CertFile(o.CertDir, render.ListenerCertName(verifying.TLS, verifying.TLS.Certificates[0])) + " [verify required no-ca-names ca-file " + render.CAFile(o.CertDir, "ca_y") + "] c.example.com"}
	if !slices.Equal(lines, want) {
		t.Errorf("the listener's crt-list = %q, want %q", lines, want)
	}
	if _, ok := w.lists[render.CrtListFile(o.CertDir, "gw_a")]; ok {
		t.Error("the shared frontend has a crt-list of its own")
	}
	if _, ok := w.lists[render.CrtListFile(o.CertDir, "gw_b")]; !ok {
		t.Error("the frontend verifying its clients with the fallback lost its crt-list")
	}
	if _, ok := w.lists[render.CrtListFile(o.CertDir, "gw_c")]; ok {
		t.Error("the frontend verifying its clients on names of its own has a crt-list of its own")
	}
	if w.idleListener || w.none() {
		t.Error("certificates to serve counted as none")
	}
	if idle := certsOf(o, model.Config{}); !idle.idleListener || !idle.none() {
		t.Errorf("the listener alone: idle %v, none %v; want both", idle.idleListener, idle.none())
	}
}
