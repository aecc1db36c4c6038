package runtimeapi

import (
	"context"
	"crypto/tls"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// TestIssuerMapKeptAcrossReloads: the issuers' map an HTTPS frontend's
// host rules read (render/hostauth.go, written by the worker itself) is
// on disk after every reload, so the file on disk stays a config HAProxy
// loads (`haproxy -c`). Before, a reload's pruning of the route maps
// deleted it (it is no route map): the next `haproxy -c` failed, as the
// e2e chaos test's check found.
func TestIssuerMapKeptAcrossReloads(t *testing.T) {
	l := startMapLab(t)
	w := newTLSWorld(t)
	ctx := context.Background()
	_, cert := w.issue(testcert.ECDSA, "a.example")
	cfg := model.Config{
		Frontends: []model.Frontend{{Name: "gw_apps_gw_443", Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: w.fePort}},
			TLS: &model.TLS{Certificates: []model.Certificate{cert}, Default: cert.Name, ALPN: []string{"h2", "http/1.1"}},
			HTTP: model.Shaped(&model.HTTP{Port: 443, Hosts: []model.HTTPHost{{Name: "*", Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 0}}}},
				Actions: []model.HTTPAction{{Backends: one("gwh_a")}}})}},
		Backends: []*model.Backend{{Name: "gwh_a", Service: "apps/a", Balance: "roundrobin", HTTP: true,
			Servers: []model.Server{{Addr: netip.MustParseAddr("127.0.0.1"), Port: w.port}}}},
	}
	issuers := render.IssuerMapFile(l.d.opts.Render.ACLDir)
	check := func(step string) {
		t.Helper()
		if _, err := os.Stat(issuers); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if out, err := exec.Command(haproxytest.Bin(), "-c", "-q", "-f", l.cfgPath).CombinedOutput(); err != nil {
			t.Fatalf("%s: haproxy -c: %v: %s", step, err, out)
		}
	}
	before := l.reloads(ctx, t)
	if _, err := l.d.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	check("first reload")
	// Another frontend: structure, a second reload, its maps pruned.
	more := cfg
	more.Frontends = append([]model.Frontend{{Name: "fe_tcp", Backend: "gwh_a", Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: uint16(haproxytest.FreePort(t))}}}}, cfg.Frontends...)
	if _, err := l.d.Apply(ctx, more); err != nil {
		t.Fatal(err)
	}
	if n := l.reloads(ctx, t) - before; n != 2 {
		t.Fatalf("%d reloads, want 2: the test prunes nothing", n)
	}
	check("second reload")
}

// TestIssuersPrunedWhenTheBundleRotates: a host verifying its clients
// (its certificate's own CA, as an Ingress's auth-tls) has its worker
// learn the issuer of a client verified on a full handshake
// (render/hostauth.go); its CA bundle rotated at runtime (no reload),
// the keys learned under the old bundle's digest leave the worker's
// issuers' map (pruneIssuers), and the client is learned again under
// the new one. Without the pruning the old key stays until a reload.
func TestIssuersPrunedWhenTheBundleRotates(t *testing.T) {
	l := startMapLab(t)
	w := newTLSWorld(t)
	ctx := context.Background()
	caA, caB := testcert.CA(t, "client CA a"), testcert.CA(t, "client CA b")
	client := testcert.ClientPair(t, caA, "client")
	_, cert := w.issue(testcert.ECDSA, "a.example")
	be := httpBackend(t, "a")
	cfgOf := func(bundle []byte) model.Config {
		c := cert
		c.Client = &model.ClientAuth{CA: "cca_apps_a", CAPEM: bundle}
		return model.Config{
			Frontends: []model.Frontend{{Name: "ing_https", Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: w.fePort}},
				TLS: &model.TLS{Certificates: []model.Certificate{c}, Default: c.Name, ALPN: []string{"http/1.1"}},
				HTTP: model.Shaped(&model.HTTP{Port: 443, Hosts: []model.HTTPHost{{Name: "a.example", Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 0}}}},
					Actions: []model.HTTPAction{{Backends: one("ing_a")}}})}},
			Backends: []*model.Backend{{Name: "ing_a", Service: "apps/a", Balance: "roundrobin", HTTP: true,
				Servers: []model.Server{{Addr: be.Addr(), Port: be.Port()}}}},
		}
	}
	issuers := render.IssuerMapFile(l.d.opts.Render.ACLDir)
	// learned makes one request on a full handshake and returns the
	// worker's issuers' map's values of the host.
	learned := func(step string) []string {
		t.Helper()
		c, err := net.DialTimeout("tcp", w.addr, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		a, err := testcert.Get(c, &tls.Config{ServerName: "a.example", Certificates: []tls.Certificate{*client}, InsecureSkipVerify: true}, "a.example") //nolint:gosec // the server is not what is tested
		if err != nil || !strings.HasPrefix(a.Status, "HTTP/1.1 200") {
			t.Fatalf("%s: %q, %v; want 200", step, a.Status, err)
		}
		var values []string
		for k := range showMap(ctx, t, l.d, issuers) {
			if host, rest, _ := strings.Cut(k, "|"); host == "ing_https/a.example" {
				v, _, _ := strings.Cut(rest, "|")
				values = append(values, v)
			}
		}
		slices.Sort(values)
		return values
	}
	if _, err := l.d.Apply(ctx, cfgOf(caA.PEM())); err != nil {
		t.Fatal(err)
	}
	first := learned("first bundle")
	if len(first) != 1 || !strings.HasPrefix(first[0], render.HostRequired+"/") {
		t.Fatalf("learned %q, want one required/<digest>", first)
	}
	before := l.reloads(ctx, t)
	res, err := l.d.Apply(ctx, cfgOf(append(caA.PEM(), caB.PEM()...))) // rotated: another digest
	if err != nil || res.Reloaded {
		t.Fatalf("rotation: reloaded %v, %v; want none", res.Reloaded, err)
	}
	now := learned("rotated bundle")
	if len(now) != 1 || now[0] == first[0] {
		t.Errorf("after the rotation the host's keys are %q, want only the new digest's (not %q)", now, first[0])
	}
	if n := l.reloads(ctx, t) - before; n != 0 {
		t.Errorf("%d reloads", n)
	}
}
