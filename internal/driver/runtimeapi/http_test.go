package runtimeapi

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// startMapLab is startLab with the pattern files (ACL and map files) in
// an acl directory beside the config, as run has them.
func startMapLab(t testing.TB) *testLab {
	t.Helper()
	dir := t.TempDir()
	l := &testLab{cfgPath: filepath.Join(dir, "haproxy.cfg"), statePath: filepath.Join(dir, "state")}
	if err := os.WriteFile(l.cfgPath, []byte(haproxytest.MinimalConfig(dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	l.p = haproxytest.Start(t, dir, l.cfgPath)
	l.d = NewHAProxy(Options{ConfigPath: l.cfgPath, Binary: haproxytest.Bin(), MasterSocket: l.p.MasterSocket, ReloadTimeout: time.Minute,
		Render: render.Options{StatsSocket: l.p.StatsSocket, StateFile: l.statePath, ACLDir: filepath.Join(dir, "acl")}})
	t.Cleanup(func() { _ = l.d.Close() })
	return l
}

// httpBackend is an HTTP server on loopback answering its name and the
// request headers the tests look at.
func httpBackend(t *testing.T, name string) netip.AddrPort {
	return serveHTTP(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s set=%s add=%s gone=%s", name, r.Header.Get("X-Set"), strings.Join(r.Header.Values("X-Add"), "+"), r.Header.Get("X-Gone"))
	})
}

// serveHTTP serves h on a free loopback port for the test's lifetime.
func serveHTTP(t testing.TB, h http.HandlerFunc) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return netip.MustParseAddrPort(ln.Addr().String())
}

// twoBackends is the setting of the HTTP map tests: a frontend
// gw_apps_gw_80 on a free port of 127.0.0.1 (addr) whose table cfgOf
// takes, before backends gwh_a and gwh_b of one server each (a, b).
func twoBackends(t *testing.T, a, b netip.AddrPort) (addr string, cfgOf func(*model.HTTP) model.Config) {
	port := uint16(haproxytest.FreePort(t))
	be := func(n string, s netip.AddrPort) *model.Backend {
		return &model.Backend{Name: n, Service: "apps/" + n, Balance: "roundrobin", HTTP: true, Servers: []model.Server{{Addr: s.Addr(), Port: s.Port()}}}
	}
	return fmt.Sprintf("127.0.0.1:%d", port), func(h *model.HTTP) model.Config {
		return model.Config{
			Frontends: []model.Frontend{{Name: "gw_apps_gw_80", Service: "apps/gw", Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: port}}, HTTP: h}},
			Backends:  []*model.Backend{be("gwh_a", a), be("gwh_b", b)},
		}
	}
}

// one is a single backend of weight 1.
func one(n string) []model.WeightedBackend { return []model.WeightedBackend{{Name: n, Weight: 1}} }

// httpGet sends one request for host and path (headers "name: value";
// "Method: M" is the method) and returns the status and the body, or the
// Location of a redirect.
func httpGet(t *testing.T, addr, host, path string, headers ...string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for _, h := range headers {
		n, v, _ := strings.Cut(h, ": ")
		if n == "Method" {
			req.Method = v
			continue
		}
		req.Header.Add(n, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s%s: %v", host, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if loc := resp.Header.Get("Location"); loc != "" {
		return resp.StatusCode, loc
	}
	return resp.StatusCode, string(body)
}

// TestHTTPRoutesWithoutReload: an HTTP frontend routes by host, path and
// header, splits by weight, changes headers and redirects, all from its
// maps; routes added, changed and deleted (hosts, paths, header values,
// weights, redirects, header values set) are Runtime API map updates,
// never a reload, and the traffic follows each change.
func TestHTTPRoutesWithoutReload(t *testing.T) {
	l := startMapLab(t)
	d := l.d
	ctx := context.Background()

	a, b := httpBackend(t, "A"), httpBackend(t, "B")
	addr, cfgOf := twoBackends(t, a, b)
	headers := func() model.HTTPAction {
		return model.HTTPAction{Backends: one("gwh_b"), Set: []model.HeaderValue{{Name: "x-set", Value: "one"}},
			Add: []model.HeaderValue{{Name: "x-add", Value: "two"}}, Remove: []string{"x-gone"}}
	}
	first := model.Shaped(&model.HTTP{Port: 80,
		Hosts: []model.HTTPHost{
			{Name: "a.example.com", Rules: []model.HTTPRule{
				{PathType: model.PathExact, Path: "/exact", Action: 1},
				{PathType: model.PathPrefix, Path: "/post", Method: "POST", Action: 1},
				{PathType: model.PathPrefix, Path: "/v2", Headers: []model.HeaderMatch{{Name: "version", Value: "two"}}, Action: 1},
				{PathType: model.PathPrefix, Path: "/v2", Action: 0},
				{PathType: model.PathPrefix, Path: "/", Action: 0},
			}},
			{Name: "*.example.com", Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 2}}},
		},
		Actions: []model.HTTPAction{{Backends: one("gwh_a")}, headers(),
			{Backends: []model.WeightedBackend{{Name: "gwh_a", Weight: 1}, {Name: "gwh_b", Weight: 1}}}},
	})
	if _, err := d.Apply(ctx, cfgOf(first)); err != nil {
		t.Fatal(err)
	}
	type req struct {
		host, path string
		headers    []string
		status     int
		body       string
	}
	check := func(step string, reqs []req) {
		t.Helper()
		for _, r := range reqs {
			status, body := httpGet(t, addr, r.host, r.path, r.headers...)
			if status != r.status || !strings.HasPrefix(body, r.body) {
				t.Errorf("%s: GET %s%s %v: %d %q, want %d %q", step, r.host, r.path, r.headers, status, body, r.status, r.body)
			}
		}
	}
	check("first", []req{
		{"a.example.com", "/exact", []string{"X-Gone: x"}, 200, "B set=one add=two gone="},
		{"A.Example.com:80", "/exact/no", nil, 200, "A"},
		{"a.example.com", "/v2", []string{"Version: two"}, 200, "B"},
		{"a.example.com", "/post/x", []string{"Method: POST"}, 200, "B"},
		{"a.example.com", "/post/x", []string{"Method: PUT"}, 200, "A"},
		{"a.example.com", "/v2/x", []string{"version: three"}, 200, "A"},
		{"a.example.com", "/v2x", []string{"version: two"}, 200, "A"}, // element-wise: /v2 does not take /v2x
		{"other.net", "/", nil, 404, ""},
	})
	// The 1:1 split over 200 requests.
	count := map[string]int{}
	for range 200 {
		_, body := httpGet(t, addr, "x.y.example.com", "/")
		count[body[:1]]++
	}
	if count["A"] < 60 || count["B"] < 60 {
		t.Errorf("1:1 split: %v", count)
	}
	reloads := l.reloads(ctx, t)

	// Everything changes but the header names and the backends: a host
	// deleted and one added, a path moved, a header value, a weight all
	// to one backend, a redirect, a header value set, a route whose
	// backend does not resolve.
	second := model.Shaped(&model.HTTP{Port: 80,
		Hosts: []model.HTTPHost{
			{Name: "b.example.com", Rules: []model.HTTPRule{
				{PathType: model.PathExact, Path: "/moved", Action: 3},
				{PathType: model.PathPrefix, Path: "/v3", Headers: []model.HeaderMatch{{Name: "version", Value: "three"}}, Action: 1},
				{PathType: model.PathPrefix, Path: "/broken", Action: 4},
				{PathType: model.PathPrefix, Path: "/post", Method: "POST", Action: 0},
				{PathType: model.PathPrefix, Path: "/", Action: 2},
			}},
			{Name: model.AnyHost, Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 0}}},
		},
		Actions: []model.HTTPAction{{Backends: one("gwh_a")}, headers(),
			{Backends: []model.WeightedBackend{{Name: "gwh_a", Weight: 0}, {Name: "gwh_b", Weight: 1}}},
			{Redirect: &model.Redirect{Scheme: "https", Host: "example.org", Code: 301}},
			{Backends: one(model.RejectBackend)}},
	})
	second.Actions[1].Set[0].Value = "uno"
	if _, err := d.Apply(ctx, cfgOf(second)); err != nil {
		t.Fatal(err)
	}
	check("second", []req{
		{"a.example.com", "/exact", nil, 200, "A"}, // its host is gone: any host's rules
		{"b.example.com", "/moved?q=1", nil, 301, "https://example.org/moved?q=1"},
		{"b.example.com", "/v3/x", []string{"version: three"}, 200, "B set=uno"},
		{"b.example.com", "/v3/x", []string{"version: two"}, 200, "B set= "},
		{"b.example.com", "/broken", nil, 500, ""},
		{"b.example.com", "/post", []string{"Method: POST"}, 200, "A"},
		{"b.example.com", "/post", nil, 200, "B"},
		{"b.example.com", "/", nil, 200, "B"},
		{"b.example.com", "/", nil, 200, "B"},
		{"other.net", "/", nil, 200, "A"},
	})
	if got := l.reloads(ctx, t); got != reloads {
		t.Errorf("%d reloads for route changes, want 0", got-reloads)
	}

	// Deleting every route: every request is answered 404 (the header
	// names matched and changed leave the configuration: one reload).
	if _, err := d.Apply(ctx, cfgOf(model.Shaped(&model.HTTP{Port: 80}))); err != nil {
		t.Fatal(err)
	}
	check("none", []req{{"b.example.com", "/", nil, 404, ""}, {"other.net", "/", nil, 404, ""}})
}
