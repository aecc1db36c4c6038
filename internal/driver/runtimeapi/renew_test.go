package runtimeapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// TestBackendCARenewedWithoutReload: the CA bundle of a backend whose
// servers present no client certificate changes with no reload (counted
// from the master) and no failed request while requests flow: the
// servers are created again at runtime (renew.go). A server signed by the
// new CA is then let in, and one signed only by the old CA refused; the
// runtime state read back afterwards is the one rendered (slots s1, s2,
// ... in order: no reload either). With a health check of the servers'
// own and without.
func TestBackendCARenewedWithoutReload(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check model.Check
	}{
		{"unchecked", model.Check{}},
		{"checked", model.Check{Enabled: true, Inter: time.Second, Rise: 1, Fall: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRenewLab(t, tc.check)
			l, ctx, caA, caB, srvA, srvB, addr, cfgOf := r.l, r.ctx, r.caA, r.caB, r.srvA, r.srvB, r.addr, r.cfgOf
			answers := func(step string, codes ...int) {
				t.Helper()
				var got int
				var body string
				for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
					if got, body = httpGet(t, addr, "a.example.com", "/"); containsCode(codes, got) {
						return
					}
				}
				t.Fatalf("%s: last answer %d %q, want one of %v", step, got, body, codes)
			}
			apply := func(step string, cfg model.Config, reload bool) {
				t.Helper()
				if reloaded, err := applyUntilDone(ctx, l.d, cfg); err != nil || reloaded != reload {
					t.Fatalf("%s: reloaded %v, %v; want reloaded %v", step, reloaded, err, reload)
				}
			}

			apply("CA a", cfgOf(srvA, caA.PEM()), true)
			answers("CA a, server of CA a", http.StatusOK)
			base := l.reloads(ctx, t)

			// Both CAs, while requests flow: none may fail.
			load := startLoad(addr, "a.example.com")
			apply("CA a and b", cfgOf(srvA, append(caA.PEM(), caB.PEM()...)), false)
			answers("CA a and b, server of CA a", http.StatusOK)
			if n, failed, last := load.stop(); n == 0 || failed > 0 {
				t.Errorf("renewal under load: %d of %d requests failed, the last: %s", failed, n, last)
			}
			// Without the renewal the servers would still trust CA a alone.
			apply("server of CA b", cfgOf(srvB, append(caA.PEM(), caB.PEM()...)), false)
			answers("CA a and b, server of CA b", http.StatusOK)
			// CA b alone: the server signed only by CA a is refused, the
			// one of CA b served.
			apply("CA b", cfgOf(srvB, caB.PEM()), false)
			answers("CA b, server of CA b", http.StatusOK)
			apply("server of CA a", cfgOf(srvA, caB.PEM()), false)
			answers("CA b, server of CA a", refusedCodes...)

			// The renewed slots read back as rendered: no reload.
			l.d.mu.Lock()
			l.d.known = false
			l.d.mu.Unlock()
			apply("read back", cfgOf(srvB, caB.PEM()), false)
			answers("read back, server of CA b", http.StatusOK)
			if n := l.reloads(ctx, t); n != base {
				t.Errorf("%d reloads for the CA changes, want 0", n-base)
			}
		})
	}
}

// renewLab is a lab HAProxy before one TLS backend gwhs_a (checked as
// check says) of one server, two CAs and a server signed by each.
type renewLab struct {
	l          *testLab
	ctx        context.Context
	caA, caB   testcert.Cert
	srvA, srvB netip.AddrPort
	addr       string
	port       uint16
	check      model.Check
}

func newRenewLab(t *testing.T, check model.Check) *renewLab {
	r := &renewLab{l: startMapLab(t), ctx: context.Background(), caA: testcert.CA(t, "CA a"), caB: testcert.CA(t, "CA b"),
		port: uint16(haproxytest.FreePort(t)), check: check}
	r.srvA, r.srvB = serveTLS(t, r.caA, "a.example.com"), serveTLS(t, r.caB, "a.example.com")
	r.addr = net.JoinHostPort("127.0.0.1", fmt.Sprint(r.port))
	return r
}

// cfgOf is the model of gwhs_a at server srv, verified against bundle.
func (r *renewLab) cfgOf(srv netip.AddrPort, bundle []byte) model.Config {
	return tlsBackendConfig(r.port, &model.Backend{Name: "gwhs_a", Service: "apps/a", Balance: "roundrobin", HTTP: true, Check: r.check,
		Servers: []model.Server{{Addr: srv.Addr(), Port: srv.Port()}},
		TLS:     &model.BackendTLS{SNI: "a.example.com", CA: "ca_apps_p", CAPEM: bundle}})
}

// applyUntilDone applies cfg, and again as the loop would while the
// driver has work under way (Result.Again: a renewal), for at most a
// minute; it reports whether any of these passes reloaded.
func applyUntilDone(ctx context.Context, d *HAProxy, cfg model.Config) (reloaded bool, err error) {
	for end := time.Now().Add(time.Minute); ; {
		res, err := d.Apply(ctx, cfg)
		reloaded = reloaded || res.Reloaded
		if err != nil || res.Again == 0 {
			return reloaded, err
		}
		if time.Now().After(end) {
			return reloaded, fmt.Errorf("still under way after a minute")
		}
		time.Sleep(res.Again) // the loop's own timer, as internal/loop adds the key again
	}
}

// tlsBackendConfig is an HTTP frontend on port of 127.0.0.1 sending every
// request to be.
func tlsBackendConfig(port uint16, be *model.Backend) model.Config {
	return model.Config{
		Frontends: []model.Frontend{{Name: "fe_80", Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: port}},
			HTTP: model.Shaped(&model.HTTP{Port: 80, Hosts: []model.HTTPHost{{Name: "*", Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 0}}}},
				Actions: []model.HTTPAction{{Backends: one(be.Name)}}})}},
		Backends: []*model.Backend{be},
	}
}

func containsCode(codes []int, c int) bool {
	for _, x := range codes {
		if x == c {
			return true
		}
	}
	return false
}

// requestLoad sends requests to addr one after another until stopped, counting
// those not answered 200.
type requestLoad struct {
	done   chan struct{}
	wg     sync.WaitGroup
	n, bad int
	last   string
}

func startLoad(addr, host string) *requestLoad {
	l := &requestLoad{done: make(chan struct{})}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			select {
			case <-l.done:
				return
			default:
			}
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
			req.Host = host
			resp, err := c.Do(req)
			l.n++
			switch {
			case err != nil:
				l.bad, l.last = l.bad+1, err.Error()
			default:
				if resp.StatusCode != http.StatusOK {
					l.bad, l.last = l.bad+1, resp.Status
				}
				_ = resp.Body.Close()
			}
		}
	}()
	return l
}

// stop ends the load and returns how many requests were sent, how many
// failed, and the last failure.
func (l *requestLoad) stop() (n, bad int, last string) {
	close(l.done)
	l.wg.Wait()
	return l.n, l.bad, l.last
}

// TestBackendCAReloadsWhenNotRenewable: a backend presenting no client
// certificate whose servers `add server` cannot create as rendered (cookie
// affinity: 2.6 takes no `cookie` at runtime) reloads when its CA file
// takes another bundle (staleServerCAs), rather than commit a bundle its
// servers would not use: the server signed by the new CA is then served.
func TestBackendCAReloadsWhenNotRenewable(t *testing.T) {
	l := startMapLab(t)
	ctx := context.Background()
	caA, caB := testcert.CA(t, "CA a"), testcert.CA(t, "CA b")
	srv := serveTLS(t, caB, "a.example.com")
	port := uint16(haproxytest.FreePort(t))
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	cfgOf := func(bundle []byte) model.Config {
		return tlsBackendConfig(port, &model.Backend{Name: "ing_a", Service: "apps/a", Balance: "roundrobin", HTTP: true,
			Cookie:  &model.CookieAffinity{Name: "srv"},
			Servers: []model.Server{{Addr: srv.Addr(), Port: srv.Port()}},
			TLS:     &model.BackendTLS{SNI: "a.example.com", CA: "ca_apps_s", CAPEM: bundle}})
	}
	if res, err := l.d.Apply(ctx, cfgOf(caA.PEM())); err != nil || !res.Reloaded {
		t.Fatalf("CA a: reloaded %v, %v", res.Reloaded, err)
	}
	if code, body := httpGet(t, addr, "a.example.com", "/"); !containsCode(refusedCodes, code) {
		t.Fatalf("CA a, server of CA b: %d %q, want one of %v", code, body, refusedCodes)
	}
	if res, err := l.d.Apply(ctx, cfgOf(caB.PEM())); err != nil || !res.Reloaded {
		t.Fatalf("CA b: reloaded %v, %v; want a reload", res.Reloaded, err)
	}
	var code int
	var body string
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if code, body = httpGet(t, addr, "a.example.com", "/"); code == http.StatusOK {
			return
		}
	}
	t.Fatalf("CA b, server of CA b: last answer %d %q, want 200", code, body)
}
