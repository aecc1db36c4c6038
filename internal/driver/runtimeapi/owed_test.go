package runtimeapi

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// unchanged is cfg as the desired package hands a servers-only pass that
// changed no server: Changes set and empty ("the last pass's Config").
func unchanged(cfg model.Config) model.Config {
	cfg.Changes = &model.Changes{Base: cfg.Backends}
	return cfg
}

// TestServersOnlyPassDeliversOwed: a reload the driver owes that no model
// difference shows (owed.go) is delivered by the next pass even when that
// pass changed no server (an empty Changes list, which the servers-only
// path would apply as nothing), and a growth reload may not go aside
// meanwhile; once delivered, such a pass takes the servers-only path
// again, with no reload.
func TestServersOnlyPassDeliversOwed(t *testing.T) {
	statsPort := uint16(haproxytest.FreePort(t))
	for _, tc := range []struct {
		name  string
		owe   func(d *HAProxy)
		check func(t *testing.T, l *testLab)
	}{
		{
			name: "render options changed",
			owe: func(d *HAProxy) {
				d.SetStatsPage(model.Bind{Addr: netip.MustParseAddr("127.0.0.1"), Port: statsPort},
					render.StatsAuth{User: "admin", Password: "owed"}, "stats page changed")
			},
			check: func(t *testing.T, l *testLab) {
				if b, _ := os.ReadFile(l.cfgPath); !strings.Contains(string(b), fmt.Sprintf("127.0.0.1:%d", statsPort)) {
					t.Errorf("the config written holds no stats page on port %d", statsPort)
				}
			},
		},
		{
			name: "structure hash in doubt after a failed runtime creation",
			owe:  func(d *HAProxy) { d.hash = dynamicFailed }, // as addBackends leaves it
			check: func(t *testing.T, l *testLab) {
				if l.d.hash == dynamicFailed {
					t.Error("the hash is still in doubt after the reload")
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := startLabWith(t, func(o *Options) { o.GrowAside = true })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cfg := model.Config{
				Frontends: []model.Frontend{{Name: "fe_a", Backend: "be_a",
					Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: uint16(haproxytest.FreePort(t))}}}},
				Backends: []*model.Backend{{Name: "be_a", Balance: "roundrobin",
					Servers: []model.Server{{Addr: netip.MustParseAddr("10.1.0.1"), Port: 30000}}}},
			}
			if _, err := l.d.Apply(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			fast := 0
			l.d.opts.onServersOnly = func() { fast++ }
			if res, err := l.d.Apply(ctx, unchanged(cfg)); err != nil || res.Reloaded || fast != 1 {
				t.Fatalf("nothing owed: reloaded %v, servers-only passes %d, %v; want the servers-only path", res.Reloaded, fast, err)
			}
			tc.owe(l.d)
			if l.d.mayAside() {
				t.Error("a growth reload may go aside while a reload is owed")
			}
			if res, err := l.d.Apply(ctx, unchanged(cfg)); err != nil || !res.Reloaded {
				t.Fatalf("owed: reloaded %v, %v; want the owed reload", res.Reloaded, err)
			}
			tc.check(t, l)
			if res, err := l.d.Apply(ctx, unchanged(cfg)); err != nil || res.Reloaded || fast != 2 {
				t.Fatalf("delivered: reloaded %v, servers-only passes %d, %v; want the servers-only path", res.Reloaded, fast, err)
			}
			if !l.d.mayAside() {
				t.Error("a growth reload may not go aside once the owed reload is delivered")
			}
		})
	}
}

// TestServersOnlyPassDeliversStaleClientFiles: a controller started
// afresh finds the worker holding another backend client certificate than
// the one wanted, which this worker may not take at runtime (it was not
// loaded by this driver: clientcerts.go): the pass leaves it and asks to
// come back. The pass that comes back changed no server (an empty
// Changes list) and still reloads, after which the server sees the new
// certificate.
func TestServersOnlyPassDeliversStaleClientFiles(t *testing.T) {
	l := startMapLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, clientCA := newClientCertServer(t, "client CA o", nil, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close") // a new connection, the certificate presented again
		fmt.Fprintf(w, "cn=%s", r.TLS.PeerCertificates[0].Subject.CommonName)
	})
	cfgOf := func(cn string) model.Config { return b.withClientCert(t, clientCA, cn) }
	subject := func(step, cn string) {
		t.Helper()
		if code, body, ok := b.untilAnswer("cn=" + cn); !ok {
			t.Fatalf("%s: last answer %d %q, want 200 cn=%s", step, code, body, cn)
		}
	}
	if _, err := applyUntilDone(ctx, l.d, cfgOf("client a")); err != nil {
		t.Fatal(err)
	}
	subject("first", "client a")

	d := NewHAProxy(l.d.opts) // a controller started afresh
	t.Cleanup(func() { _ = d.Close() })
	cfg := cfgOf("client b")
	res, err := d.Apply(ctx, cfg)
	if err != nil || res.Reloaded || res.Again == 0 {
		t.Fatalf("restarted, certificate b: reloaded %v, again %v, %v; want the file left for the next pass", res.Reloaded, res.Again, err)
	}
	if res, err = d.Apply(ctx, unchanged(cfg)); err != nil || !res.Reloaded {
		t.Fatalf("the pass after, no server changed: reloaded %v, %v; want the reload for the client certificate", res.Reloaded, err)
	}
	subject("after the owed reload", "client b")
	if d.owesReload() != "" {
		t.Errorf("still owed after the reload: %q", d.owesReload())
	}
}

// withClientCert is b's config presenting a client certificate of
// subject cn issued by ca (its file named for the Secret: the same name
// whatever the certificate).
func (b *clientCertBackend) withClientCert(t *testing.T, ca testcert.Cert, cn string) model.Config {
	c := testcert.Issue(t, testcert.Spec{CN: cn, Client: true}, ca)
	bu, err := certs.Parse(c.PEM(), c.KeyPEM(t), c.Cert.NotBefore)
	if err != nil {
		t.Fatal(err)
	}
	return b.config("gwhs_a_ccert_apps_client", &model.BackendTLS{SNI: "a.example.com", CA: "ca_apps_p", CAPEM: b.serverCA.PEM(),
		Cert: "ccert_apps_client", CertPEM: bu.PEM})
}
