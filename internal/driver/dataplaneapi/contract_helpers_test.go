package dataplaneapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane/dataplanetest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The contract tests run against the test server always, and against a
// real Data Plane API when HKS_DATAPLANE_URL (with HKS_DATAPLANE_USERNAME
// and HKS_DATAPLANE_PASSWORD) names one that manages an HAProxy 2.6 in
// master-worker mode, and HKS_DATAPLANE_MASTER_SOCKET names that HAProxy's
// master socket: the API lists only some reloads, so they are counted from
// HAProxy's master (show proc). Every test creates the sections it uses,
// under its own names, and deletes them, so the suite can run again and
// again on one API; it leaves alone what it did not create (but, in the
// every-Service tests, the driver deletes leftover sections named as it
// owns them: fe_/be_<namespace>_<name>_<port>).
const (
	user, pass = "admin", "s3cret-test-password"
	token      = "test-bearer-token"
)

// api is one Data Plane API under test.
type api struct {
	name   string
	url    string
	srv    *dataplanetest.Server // nil for a real API
	master *haproxy.Master       // a real API's HAProxy
	user   string
	pass   string
	c      *dataplane.Client
	made   []*Driver // closed when the test ends
}

// apis returns the APIs a contract test runs against: a fresh test server,
// and the real API when configured.
func apis(t *testing.T) []*api {
	t.Helper()
	srv := dataplanetest.Start(t, dataplanetest.Options{Users: map[string]string{user: pass}, Tokens: []string{token}})
	out := []*api{{name: "testserver", url: srv.URL, srv: srv, user: user, pass: pass}}
	switch u, m := os.Getenv("HKS_DATAPLANE_URL"), os.Getenv("HKS_DATAPLANE_MASTER_SOCKET"); {
	case u == "":
		t.Log("real Data Plane API: skipped (HKS_DATAPLANE_URL is not set)")
	case m == "":
		t.Error("real Data Plane API: HKS_DATAPLANE_MASTER_SOCKET must name its HAProxy's master socket (reloads are counted there)")
	default:
		out = append(out, &api{name: "real", url: u, master: haproxy.NewMaster(m),
			user: os.Getenv("HKS_DATAPLANE_USERNAME"), pass: os.Getenv("HKS_DATAPLANE_PASSWORD")})
	}
	for _, a := range out {
		a.c = a.client(t, nil)
		t.Cleanup(func() {
			for _, d := range a.made {
				d.Close()
			}
		})
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

// run runs f as a subtest against every API. The drivers f made are
// closed, and their background writes of the configuration ended, before
// the subtest's cleanups delete its sections (else a write under way makes
// a delete fail on the version).
func run(t *testing.T, f func(t *testing.T, a *api)) {
	for _, a := range apis(t) {
		t.Run(a.name, func(t *testing.T) {
			defer a.closeDrivers()
			f(t, a)
		})
	}
}

func (a *api) closeDrivers() {
	for _, d := range a.made {
		d.Close()
		d.mu.Lock()
		for d.persisting {
			d.idle.Wait()
		}
		d.mu.Unlock()
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
	d := New(opts)
	a.made = append(a.made, d)
	return d
}

// reloads counts HAProxy's reloads, failed ones too: the test server's,
// or those the real HAProxy's master reports (show proc).
func (a *api) reloads(t *testing.T) int {
	t.Helper()
	if a.srv != nil {
		return a.srv.Reloads()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := a.master.ShowProc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return p.Reloads
}

// section creates a section of the test's own (a backend, or a frontend
// with a bind) through the API, after deleting any of that name an earlier
// run left, and deletes it when the test ends. It waits for the reloads.
func (a *api) section(t *testing.T, kind string, obj Object, child Object) {
	t.Helper()
	name := obj["name"].(string)
	path, one := dataplane.BackendsPath, dataplane.BackendPath(name)
	if kind == "frontend" {
		path, one = dataplane.FrontendsPath, dataplane.FrontendPath(name)
	}
	a.deleteSection(t, one)
	body := maps.Clone(obj)
	if child != nil {
		key := "servers"
		if kind == "frontend" {
			key = "binds"
		}
		body[key] = map[string]any{child["name"].(string): child}
	}
	resp, err := a.c.Do(context.Background(), http.MethodPost, path,
		url.Values{"version": {fmt.Sprint(a.version(t))}, "full_section": {"true"}}, body, nil)
	if err != nil {
		t.Fatalf("creating %s %s: %v", kind, name, err)
	}
	a.waitReload(t, resp.ReloadID)
	t.Cleanup(func() { a.deleteSection(t, one) })
}

// deleteSection deletes a section when it exists, and waits for the reload.
func (a *api) deleteSection(t *testing.T, path string) {
	t.Helper()
	resp, err := a.c.Delete(context.Background(), path, dataplane.Write{Version: a.version(t)})
	if errors.Is(err, dataplane.ErrNotFound) {
		return
	}
	if err != nil {
		t.Errorf("deleting %s: %v", path, err)
		return
	}
	a.waitReload(t, resp.ReloadID)
}

func (a *api) waitReload(t *testing.T, id string) {
	t.Helper()
	if id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.c.WaitReload(ctx, id, 20*time.Millisecond); err != nil {
		t.Fatalf("reload %s: %v", id, err)
	}
}

// seedBackend creates the operator's backend of a seed-mode test, named
// for the test: mode tcp, roundrobin, no server.
func (a *api) seedBackend(t *testing.T, name string) string {
	t.Helper()
	a.section(t, "backend", Object{"name": name, "mode": "tcp", "balance": map[string]any{"algorithm": "roundrobin"}}, nil)
	return name
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

// wantServing checks that HAProxy runs exactly cfg's servers in be.
func (a *api) wantServing(t *testing.T, be string, cfg model.Config) {
	t.Helper()
	if got, want := a.serving(t, be), servers(cfg); !maps.Equal(got, want) {
		t.Errorf("%s serving %v, want %v", be, got, want)
	}
}

// wantConfigured checks that the configuration of be has exactly cfg's
// servers out of maintenance: what a reload or restart of HAProxy runs.
func (a *api) wantConfigured(t *testing.T, be string, cfg model.Config) {
	t.Helper()
	objs, _, err := a.c.List(context.Background(), dataplane.ServersPath(be), "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, o := range objs {
		if o["maintenance"] != "enabled" {
			port, _ := toInt(o["port"])
			got[fmt.Sprintf("%v:%d", o["address"], port)] = true
		}
	}
	if want := servers(cfg); !maps.Equal(got, want) {
		t.Errorf("%s configured with %v, want %v", be, got, want)
	}
}

func servers(cfg model.Config) map[string]bool {
	out := map[string]bool{}
	for _, s := range cfg.Backends[0].Servers {
		out[s.Key().String()] = true
	}
	return out
}

// seedCfg is the model of the seed's Service with these servers, for the
// operator's backend named backend.
func seedCfg(backend string, servers ...string) model.Config {
	be := model.Backend{Name: backend, Service: "ingress-nginx/ingress-nginx", Balance: "roundrobin",
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

// fastDriver is a driver on a fresh test server that reloads at once (no
// cost model), for tests of many passes; closed when the test ends.
func fastDriver(t *testing.T) (*Driver, *dataplanetest.Server) {
	t.Helper()
	srv := dataplanetest.Start(t, dataplanetest.Options{ReloadDelay: time.Millisecond})
	c, err := dataplaneClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	d := New(Options{Client: c, ReloadPoll: time.Millisecond})
	t.Cleanup(d.Close)
	return d, srv
}

func dataplaneClient(url string) (*dataplane.Client, error) {
	return dataplane.New(dataplane.Options{URL: url, Timeout: 10 * time.Second})
}
