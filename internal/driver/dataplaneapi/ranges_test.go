package dataplaneapi

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Source ranges (spec.loadBalancerSourceRanges) are enforced: a client
// inside them reaches the Service, one outside is refused, through a
// transaction and through the raw configuration alike; ClientIP affinity,
// transparent binds and the PROXY protocol's rule stage are written too;
// and what either path writes reads back as the driver wrote it (a fresh
// driver finds nothing to write), after server churn written to the
// configuration in the background as well.
func TestContractSourceRangesAndRawPath(t *testing.T) {
	for _, tc := range []struct {
		name   string
		raw    int // Options.RawMinWrites and RawPersistMin
		writes int // configuration writes of two slots changed
	}{{"transaction", -1, 2}, {"raw", 1, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			run(t, func(t *testing.T, a *api) {
				ctx := context.Background()
				up := helloServer(t, "127.81.21.9")
				fePort := uint16(freeTCPPort(t))
				cfg := classCfg(t, a, "hks-ranges", "127.81.21.1", fePort, "be_hks-ranges_web_80", up)
				cfg.Frontends[0].SourceRanges = []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16"), netip.MustParsePrefix("127.81.21.5/32")}
				cfg.Frontends[0].Binds[0].Transparent = true
				cfg.Backends[0].Affinity = 3 * time.Hour
				// A second Service: the PROXY protocol (its rule acts on
				// the client the header names) and an IPv6 server, unchecked.
				other := classCfg(t, a, "hks-ranges2", "127.81.21.2", uint16(freeTCPPort(t)), "be_hks-ranges2_web_80", "127.81.21.3:30080", "[2001:db8::5]:30080")
				other.Frontends[0].AcceptProxy = true
				// and an IPv6 address not on the host, bound transparent (no traffic goes there)
				other.Frontends[0].Binds = append(other.Frontends[0].Binds, model.Bind{Addr: mustAddr("2001:db8::21"), Port: 443, Transparent: true})
				other.Frontends[0].SourceRanges = []netip.Prefix{netip.MustParsePrefix("127.81.21.5/32")}
				other.Backends[0].Check = model.Check{}
				cfg.Frontends = append(cfg.Frontends, other.Frontends...)
				cfg.Backends = append(cfg.Backends, other.Backends...)
				opts := Options{RawMinWrites: tc.raw, RawPersistMin: tc.raw}
				d := a.driver(opts)
				apply(t, d, cfg)
				if res, err := d.Apply(ctx, cfg); err != nil || res.Ops != 0 {
					t.Errorf("the same driver again: %d writes (%v), want none", res.Ops, err)
				}
				a.nothingToWrite(t, opts, cfg)
				for fe, stage := range map[string]string{"fe_hks-ranges_web_80": "connection", "fe_hks-ranges2_web_80": "content"} {
					rules, _, err := a.c.List(ctx, dataplane.FrontendPath(fe)+"/tcp_request_rules", "")
					if err != nil || len(rules) != 1 || rules[0]["type"] != stage || rules[0]["action"] != "reject" || rules[0]["cond"] != "unless" {
						t.Errorf("%s: rules %v (%v), want one %s reject", fe, rules, err, stage)
					}
				}
				fe := fmt.Sprintf("127.81.21.1:%d", fePort)
				waitServed(t, fe, "127.81.21.5")
				if refused(t, fe, "127.81.21.6") != true {
					t.Errorf("a client outside the source ranges was served")
				}
				// The ranges change: the other client now, the first no more.
				// (A new slice: an applied Config is never changed in place.)
				cfg.Frontends = slices.Clone(cfg.Frontends)
				cfg.Frontends[0].SourceRanges = []netip.Prefix{netip.MustParsePrefix("127.81.21.6/32")}
				apply(t, d, cfg)
				waitServed(t, fe, "127.81.21.6")
				if !refused(t, fe, "127.81.21.5") {
					t.Errorf("a client no longer in the source ranges was served")
				}
				// Server churn: live at once, then written in the background.
				r0 := a.reloads(t)
				moved := *cfg.Backends[1]
				moved.Servers = []model.Server{{Addr: mustAddr("127.81.21.4"), Port: 30080}, {Addr: mustAddr("2001:db8::6"), Port: 30080}}
				cfg.Backends = []*model.Backend{cfg.Backends[0], &moved}
				res, err := d.Apply(ctx, cfg)
				if err != nil || res.Reloaded {
					t.Fatalf("churn: %v, reloaded %v", err, res.Reloaded)
				}
				v := a.version(t)
				if err := d.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				if n := a.version(t) - v; n != int64(tc.writes) {
					t.Errorf("two slots written in %d writes, want %d", n, tc.writes)
				}
				if r := a.reloads(t) - r0; r != 0 {
					t.Errorf("churn and its write to the configuration made %d reloads", r)
				}
				a.nothingToWrite(t, opts, cfg)
			})
		})
	}
}

// nothingToWrite checks that a new driver finds the API as cfg wants it.
func (a *api) nothingToWrite(t *testing.T, opts Options, cfg model.Config) {
	t.Helper()
	v := a.version(t)
	res, err := a.driver(opts).Apply(context.Background(), cfg)
	if err != nil || res.Ops != 0 || a.version(t) != v {
		t.Errorf("a new driver: %d writes (%v), version %d → %d: what was written does not read back as written", res.Ops, err, v, a.version(t))
	}
}

// helloServer listens on addr (a free port) and greets every connection.
func helloServer(t *testing.T, addr string) string {
	t.Helper()
	l, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, "hello\n")
			c.Close()
		}
	}()
	return l.Addr().String()
}

// greet connects to fe from the address from and reads the greeting.
func greet(fe, from string) (string, error) {
	d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", fe)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	b, err := io.ReadAll(c)
	return string(b), err
}

// waitServed waits (10 s at most) until a client at from is greeted.
func waitServed(t *testing.T, fe, from string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := greet(fe, from)
		if strings.HasPrefix(got, "hello") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a client at %s inside the source ranges was not served through %s: %q %v", from, fe, got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// refused reports whether a client at from gets nothing through fe.
func refused(t *testing.T, fe, from string) bool {
	t.Helper()
	got, err := greet(fe, from)
	t.Logf("client at %s: %q, %v", from, got, err)
	return got == ""
}

// Seed mode cannot restrict the operator's frontend: a Service with source
// ranges is refused (no server in service, at runtime and in the
// configuration) with one OnRangesRefused call, never served to everyone;
// without the ranges it is served again.
func TestContractSeedSourceRangesRefused(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		be := a.seedBackend(t, "be_hks_refused")
		var calls []string
		d := a.driver(Options{Seed: be, OnRangesRefused: func(svc string) { calls = append(calls, svc) }})
		cfg := seedCfg(be, "127.81.22.1:30443", "127.81.22.2:30443")
		apply(t, d, cfg)
		a.wantServing(t, be, cfg)
		restricted := cfg
		restricted.Frontends = []model.Frontend{{Name: "fe_ingress-nginx_ingress-nginx_443", Service: cfg.Backends[0].Service, Backend: be,
			SourceRanges: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}}}
		for range 2 {
			apply(t, d, restricted)
		}
		if got := a.serving(t, be); len(got) != 0 {
			t.Errorf("a Service with source ranges is served by %v in seed mode", got)
		}
		if len(calls) != 1 || calls[0] != "ingress-nginx/ingress-nginx" {
			t.Errorf("OnRangesRefused calls %v, want one", calls)
		}
		if err := d.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		a.wantConfigured(t, be, model.Config{Backends: []*model.Backend{{}}})
		apply(t, d, cfg)
		a.wantServing(t, be, cfg)
	})
}

// Sections a transaction wrote (the API's JSON, with whatever it adds)
// are rewritten as text and read back as written: a change of both
// Services through the raw path, then a new driver finds nothing to do.
func TestContractRawRewritesTransactionSections(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		ctx := context.Background()
		cfg := classCfg(t, a, "hks-mixed", "127.81.23.1", uint16(freeTCPPort(t)), "be_hks-mixed_web_80", "127.81.23.2:30080")
		other := classCfg(t, a, "hks-mixed2", "127.81.23.1", uint16(freeTCPPort(t)), "be_hks-mixed2_web_80", "127.81.23.3:30080")
		cfg.Frontends = append(cfg.Frontends, other.Frontends...)
		cfg.Backends = append(cfg.Backends, other.Backends...)
		apply(t, a.driver(Options{RawMinWrites: -1}), cfg)
		raw := Options{RawMinWrites: 1}
		changed := model.Config{Frontends: slices.Clone(cfg.Frontends)}
		for i, b := range cfg.Backends {
			c := *b
			c.TimeoutServer = 2 * time.Minute
			c.Affinity = time.Hour
			changed.Backends = append(changed.Backends, &c)
			changed.Frontends[i].SourceRanges = []netip.Prefix{netip.MustParsePrefix("127.81.23.0/24")}
		}
		d := a.driver(raw)
		res, err := d.Apply(ctx, changed)
		if err != nil || !res.Reloaded {
			t.Fatalf("the change: %v, reloaded %v", err, res.Reloaded)
		}
		a.nothingToWrite(t, raw, changed)
		got, _, err := a.c.Get(ctx, dataplane.BackendPath("be_hks-mixed2_web_80"), "")
		if err != nil || !same(got["server_timeout"], 120000) {
			t.Errorf("backend after the raw write: %v (%v)", got, err)
		}
	})
}
