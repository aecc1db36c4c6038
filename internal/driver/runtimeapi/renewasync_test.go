package runtimeapi

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// TestRenewalLetsChangesThrough: while the servers of a backend are
// created again for a new CA (renew.go) and its twins wait for a slow
// health check (4 checks a second apart), a route added meanwhile is
// served within 2 s: the renewal goes on between passes instead of
// holding the one that started it. The passes come from a stand-in for
// the work loop that applies the newest model every 100 ms. The renewal
// ends (the server signed only by the new CA is then served) with no
// reload and no failed request.
func TestRenewalLetsChangesThrough(t *testing.T) {
	l := startMapLab(t)
	ctx := context.Background()
	caA, caB := testcert.CA(t, "CA a"), testcert.CA(t, "CA b")
	srvA, srvB := serveTLS(t, caA, "a.example.com"), serveTLS(t, caB, "a.example.com")
	plain := httpBackend(t, "plain")
	port := uint16(haproxytest.FreePort(t))
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	cfgOf := func(srv model.Server, bundle []byte, hosts ...string) model.Config {
		cfg := tlsBackendConfig(port, &model.Backend{Name: "gwhs_a", Service: "apps/a", Balance: "roundrobin", HTTP: true,
			Check:   model.Check{Enabled: true, Inter: time.Second, Rise: 4, Fall: 3},
			Servers: []model.Server{srv},
			TLS:     &model.BackendTLS{SNI: "a.example.com", CA: "ca_apps_p", CAPEM: bundle}})
		h := cfg.Frontends[0].HTTP
		h.Hosts[0].Name = "a.example.com"
		h.Actions = append(h.Actions, model.HTTPAction{Backends: one("plain")})
		for _, n := range hosts {
			h.Hosts = append(h.Hosts, model.HTTPHost{Name: n, Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 1}}})
		}
		model.Shaped(h)
		cfg.Backends = append(cfg.Backends, &model.Backend{Name: "plain", Service: "apps/plain", Balance: "roundrobin", HTTP: true,
			Servers: []model.Server{{Addr: plain.Addr(), Port: plain.Port()}}})
		return cfg
	}
	serverA := model.Server{Addr: srvA.Addr(), Port: srvA.Port()}
	both := append(caA.PEM(), caB.PEM()...)
	served := func(step, host, want string, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		var code int
		var body string
		for end := start.Add(within); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if code, body = tryGet(addr, host); code == http.StatusOK && strings.Contains(body, want) {
				return time.Since(start)
			}
		}
		t.Fatalf("%s: %s not served %q within %v: last answer %d %q", step, host, want, within, code, body)
		return 0
	}

	lp := startPasses(ctx, l.d, cfgOf(serverA, caA.PEM(), "b.example.com"))
	defer lp.stop(t)
	served("CA a", "a.example.com", "sni=a.example.com", 30*time.Second)
	served("CA a", "b.example.com", "plain", 10*time.Second)
	base := l.reloads(ctx, t)

	load := startLoad(addr, "a.example.com")
	lp.set(cfgOf(serverA, both, "b.example.com"))
	// The renewal's twins wait for their check (about 4 s): a route
	// added now must not wait for them.
	lp.waitRenewing(t)
	lp.set(cfgOf(serverA, both, "b.example.com", "c.example.com"))
	took := served("route added during the renewal", "c.example.com", "plain", 2*time.Second)
	t.Logf("route added during the renewal served after %v", took)
	lp.waitIdle(t, time.Minute)
	if n, failed, last := load.stop(); n == 0 || failed > 0 {
		t.Errorf("renewal under load: %d of %d requests failed, the last: %s", failed, n, last)
	}
	// The renewed servers trust CA b: the server of CA b is served.
	lp.set(cfgOf(model.Server{Addr: srvB.Addr(), Port: srvB.Port()}, both, "b.example.com", "c.example.com"))
	served("server of CA b", "a.example.com", "sni=a.example.com", 30*time.Second)
	if n := l.reloads(ctx, t); n != base {
		t.Errorf("%d reloads for the CA change and the route, want 0", n-base)
	}
}

// tryGet is one GET of host at addr: its status and body, or 0 and the
// error (nothing listening yet).
func tryGet(addr, host string) (int, string) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return 0, err.Error()
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// passes stands in for the work loop: it applies the newest model every
// 100 ms, each pass after the last one returned.
type passes struct {
	d      *HAProxy
	mu     sync.Mutex
	cfg    model.Config
	err    error
	done   chan struct{}
	wg     sync.WaitGroup
	cancel context.CancelFunc
}

func startPasses(ctx context.Context, d *HAProxy, cfg model.Config) *passes {
	ctx, cancel := context.WithCancel(ctx)
	p := &passes{d: d, cfg: cfg, done: make(chan struct{}), cancel: cancel}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			p.mu.Lock()
			cfg := p.cfg
			p.mu.Unlock()
			if _, err := d.Apply(ctx, cfg); err != nil && ctx.Err() == nil {
				p.mu.Lock()
				p.err = err
				p.mu.Unlock()
			}
			select {
			case <-p.done:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

func (p *passes) set(cfg model.Config) {
	p.mu.Lock()
	p.cfg = cfg
	p.mu.Unlock()
}

// waitRenewing waits until the driver reports a renewal under way, or a
// pass has held the driver for half a second (a driver renewing within
// one pass, as before renewals went on between passes).
func (p *passes) waitRenewing(t *testing.T) {
	t.Helper()
	busy := time.Time{}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if !p.d.mu.TryLock() {
			if busy.IsZero() {
				busy = time.Now()
			} else if time.Since(busy) > 500*time.Millisecond {
				return
			}
			continue
		}
		busy = time.Time{}
		n := p.d.renewCount()
		p.d.mu.Unlock()
		if n > 0 {
			return
		}
	}
	t.Fatal("no renewal under way within 10 s")
}

// waitIdle waits until no renewal is under way.
func (p *passes) waitIdle(t *testing.T, within time.Duration) {
	t.Helper()
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if !p.d.mu.TryLock() {
			continue
		}
		n := p.d.renewCount()
		p.d.mu.Unlock()
		if n == 0 {
			return
		}
	}
	t.Fatalf("renewal still under way after %v", within)
}

func (p *passes) stop(t *testing.T) {
	t.Helper()
	close(p.done)
	p.cancel()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		t.Errorf("a pass failed: %v", p.err)
	}
}

// TestRenewalCutShortEndsWithoutReload: a controller restarted while the
// servers of a backend were being created again (its twins serving
// beside the slots, or beside the slots created again) finds the twins in
// what HAProxy reports and ends the renewal at runtime (renewback.go):
// no reload, no failed request, no twin left, and the CA set again after
// the restart renews the servers afresh (the server signed only by the
// new CA is then served).
func TestRenewalCutShortEndsWithoutReload(t *testing.T) {
	for _, tc := range []struct {
		name  string
		phase int // the renewal is cut short while this phase waits (plan.Renew's order)
	}{
		{"twins serving beside the old slots", 0},
		{"twins serving beside the slots created again", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRenewLab(t, model.Check{Enabled: true, Inter: 500 * time.Millisecond, Rise: 3, Fall: 3})
			l, ctx, caA, caB, srvA, srvB, addr, cfgOf := r.l, r.ctx, r.caA, r.caB, r.srvA, r.srvB, r.addr, r.cfgOf
			both := append(caA.PEM(), caB.PEM()...)
			if _, err := applyUntilDone(ctx, l.d, cfgOf(srvA, caA.PEM())); err != nil {
				t.Fatal(err)
			}
			for end := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if code, _ := tryGet(addr, "a.example.com"); code == http.StatusOK {
					break
				}
				if time.Now().After(end) {
					t.Fatal("CA a: not served")
				}
			}
			base := l.reloads(ctx, t)
			load := startLoad(addr, "a.example.com")

			// Passes until the renewal waits in the phase asked for.
			for end := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if _, err := l.d.Apply(ctx, cfgOf(srvA, both)); err != nil {
					t.Fatal(err)
				}
				l.d.mu.Lock()
				rn := l.d.renewals["gwhs_a"]
				at := rn != nil && rn.sent && rn.next == tc.phase
				l.d.mu.Unlock()
				if at {
					break
				}
				if time.Now().After(end) {
					t.Fatalf("the renewal never waited in phase %d", tc.phase)
				}
			}
			// A controller started afresh.
			d := NewHAProxy(l.d.opts)
			t.Cleanup(func() { _ = d.Close() })
			if reloaded, err := applyUntilDone(ctx, d, cfgOf(srvA, both)); err != nil || reloaded {
				t.Fatalf("after the restart: reloaded %v, %v; want no reload", reloaded, err)
			}
			if n, failed, last := load.stop(); n == 0 || failed > 0 {
				t.Errorf("renewal cut short under load: %d of %d requests failed, the last: %s", failed, n, last)
			}
			_, _, twins, err := d.dumpStates(ctx)
			if err != nil || len(twins) > 0 {
				t.Errorf("twins left: %v, %v", twins, err)
			}
			if reloaded, err := applyUntilDone(ctx, d, cfgOf(srvB, both)); err != nil || reloaded {
				t.Fatalf("server of CA b: reloaded %v, %v; want no reload", reloaded, err)
			}
			for end := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if code, _ := tryGet(addr, "a.example.com"); code == http.StatusOK {
					break
				}
				if time.Now().After(end) {
					t.Fatal("server of CA b: not served after the renewal afresh")
				}
			}
			if n := l.reloads(ctx, t); n != base {
				t.Errorf("%d reloads, want 0", n-base)
			}
		})
	}
}
