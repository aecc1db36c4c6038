package runtimeapi

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"testing"

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
