package dataplaneapi

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane/dataplanetest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The contract tests run against the test server always, and against a
// real Data Plane API when HKS_DATAPLANE_URL (with HKS_DATAPLANE_USERNAME
// and HKS_DATAPLANE_PASSWORD) names one that manages an HAProxy 2.6 in
// master-worker mode whose configuration has a mode tcp frontend and the
// backend be_ingress, and nothing else.
const (
	seedBackend = "be_ingress"
	user, pass  = "admin", "s3cret-test-password"
	token       = "test-bearer-token"
)

// api is one Data Plane API under test.
type api struct {
	name string
	url  string
	srv  *dataplanetest.Server // nil for a real API
	user string
	pass string
	c    *dataplane.Client
}

// apis returns the APIs a contract test runs against: a fresh test server
// loaded with the seed's set-up, and the real API when configured.
func apis(t *testing.T) []*api {
	t.Helper()
	srv := dataplanetest.Start(t, dataplanetest.Options{Users: map[string]string{user: pass}, Tokens: []string{token}})
	srv.Load([]dataplanetest.Section{{Object: Object{"name": seedBackend, "mode": "tcp", "balance": map[string]any{"algorithm": "roundrobin"}}}},
		[]dataplanetest.Section{{Object: Object{"name": "fe_ingress", "mode": "tcp", "default_backend": seedBackend},
			Children: []Object{{"name": "main", "address": "127.81.0.1", "port": int64(freeTCPPort(t))}}}})
	out := []*api{{name: "testserver", url: srv.URL, srv: srv, user: user, pass: pass}}
	if u := os.Getenv("HKS_DATAPLANE_URL"); u != "" {
		out = append(out, &api{name: "real", url: u, user: os.Getenv("HKS_DATAPLANE_USERNAME"), pass: os.Getenv("HKS_DATAPLANE_PASSWORD")})
	} else {
		t.Log("real Data Plane API: skipped (HKS_DATAPLANE_URL is not set)")
	}
	for _, a := range out {
		a.c = a.client(t, nil)
	}
	return out
}

func (a *api) client(t *testing.T, rt http.RoundTripper) *dataplane.Client {
	t.Helper()
	c, err := dataplane.New(dataplane.Options{URL: a.url, Username: a.user, Password: a.pass, Timeout: 10 * time.Second, Transport: rt})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// run runs f as a subtest against every API.
func run(t *testing.T, f func(t *testing.T, a *api)) {
	for _, a := range apis(t) {
		t.Run(a.name, func(t *testing.T) { f(t, a) })
	}
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.81.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (a *api) driver(opts Options) *Driver {
	if opts.Client == nil {
		opts.Client = a.c
	}
	opts.ReloadPoll = 10 * time.Millisecond
	return New(opts)
}

// reloads counts the reloads the API reports (finished ones).
func (a *api) reloads(t *testing.T) int {
	t.Helper()
	rs, err := a.c.Reloads(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rs {
		if r.Status != dataplane.ReloadInProgress {
			n++
		}
	}
	return n
}

func (a *api) version(t *testing.T) int64 {
	t.Helper()
	v, err := a.c.Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (a *api) openTx(t *testing.T) int {
	t.Helper()
	txs, err := a.c.Transactions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tx := range txs {
		if tx.Status == "in_progress" {
			n++
		}
	}
	return n
}

// serving lists the address:port of the servers of be that are ready at
// runtime, read through the runtime endpoint.
func (a *api) serving(t *testing.T, be string) map[string]bool {
	t.Helper()
	rs, err := a.c.RuntimeServers(context.Background(), be)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, r := range rs {
		if r["admin_state"] == "ready" {
			port, _ := toInt(r["port"])
			ap := netip.AddrPortFrom(netip.MustParseAddr(r["address"].(string)), uint16(port))
			out[ap.String()] = true
		}
	}
	return out
}

func seedCfg(servers ...string) model.Config {
	be := model.Backend{Name: seedBackend, Service: "ingress-nginx/ingress-nginx", Balance: "roundrobin",
		Check: model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 3}}
	for _, s := range servers {
		ap := netip.MustParseAddrPort(s)
		be.Servers = append(be.Servers, model.Server{Addr: ap.Addr(), Port: ap.Port()})
	}
	return model.Config{Backends: []*model.Backend{&be}}
}

func set(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, x := range s {
		m[x] = true
	}
	return m
}

func apply(t *testing.T, d *Driver, cfg model.Config) {
	t.Helper()
	if _, err := d.Apply(context.Background(), cfg); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

// hook is a RoundTripper that calls before (once, when match says so)
// before sending a request.
type hook struct {
	match  func(*http.Request) bool
	before func()
	done   atomic.Bool
}

func (h *hook) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.match(r) && h.done.CompareAndSwap(false, true) {
		h.before()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func dataplaneClient(url string) (*dataplane.Client, error) {
	return dataplane.New(dataplane.Options{URL: url, Timeout: 10 * time.Second})
}
