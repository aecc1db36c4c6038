package runtimeapi

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// extBackend is an HTTP server on loopback answering its name, the
// request's path and query, Host and Backend header, with a response
// header X-Echo; "?delay=D" waits D first.
func extBackend(t *testing.T, name string) netip.AddrPort {
	return serveHTTP(t, func(w http.ResponseWriter, r *http.Request) {
		if d, err := time.ParseDuration(r.URL.Query().Get("delay")); err == nil && d < 5*time.Second {
			time.Sleep(d) // the slow backend a timeout is measured against
		}
		w.Header().Set("X-Echo", "echo")
		w.Header().Set("X-Gone", "there")
		fmt.Fprintf(w, "%s %s host=%s backend=%s resp=", name, r.URL.RequestURI(), r.Host, r.Header.Get("Backend"))
	})
}

// extGet is httpGet for host a.example.com that also returns the
// response headers X-Echo (every value), X-Set and X-Gone of a 200.
func extGet(t *testing.T, addr, path string, headers ...string) (int, string) {
	t.Helper()
	resp := hostDo(t, http.MethodGet, addr, path, headers...)
	defer resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != "" {
		return resp.StatusCode, loc
	}
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	body := string(buf[:n])
	if resp.StatusCode == 200 {
		body += strings.Join([]string{strings.Join(resp.Header.Values("X-Echo"), "+"), resp.Header.Get("X-Set"), resp.Header.Get("X-Gone")}, ",")
	}
	return resp.StatusCode, body
}

// hostDo sends one request for host a.example.com to addr on a
// connection of its own, with headers ("Name: value"), and returns the
// answer as it is (redirects not followed); the caller closes its body.
func hostDo(t *testing.T, method, addr, path string, headers ...string) *http.Response {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequest(method, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "a.example.com"
	for _, h := range headers {
		n, v, _ := strings.Cut(h, ": ")
		req.Header.Add(n, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// TestHTTPExtWithoutReload: the extended features on a real HAProxy with
// real requests: query parameter matches, a prefix replaced (segments,
// a trailing slash, the prefix alone, "/"), a whole path and the host
// rewritten, a redirect's path keeping the query, response headers
// changed, each backendRef's own request headers, and a timeout that
// answers 504 at its value; then every value changed and removed with
// no reload.
func TestHTTPExtWithoutReload(t *testing.T) {
	l := startMapLab(t)
	d := l.d
	ctx := context.Background()

	a, b := extBackend(t, "A"), extBackend(t, "B")
	addr, cfgOf := twoBackends(t, a, b)
	set := func(n, v string) model.HeaderMods {
		return model.HeaderMods{Set: []model.HeaderValue{{Name: n, Value: v}}}
	}
	prefix := func(p string, action int) model.HTTPRule {
		return model.HTTPRule{PathType: model.PathPrefix, Path: p, Action: action}
	}
	table := func(animal, replace string, timeout time.Duration) *model.HTTP {
		q := prefix("/q", 0)
		q.Query = []model.HeaderMatch{{Name: "animal", Value: animal}}
		return model.Shaped(&model.HTTP{Port: 80, Hosts: []model.HTTPHost{{Name: model.AnyHost, Rules: []model.HTTPRule{
			q, prefix("/q", 1), prefix("/prefix/one", 2), prefix("/strip", 3), prefix("/full", 4), prefix("/moved", 5),
			prefix("/response", 6), prefix("/split", 7), prefix("/slow", 8),
		}}},
			Actions: []model.HTTPAction{
				{Backends: one("gwh_a")},
				{Backends: one("gwh_b")},
				{Backends: one("gwh_a"), Ext: &model.HTTPActionExt{Path: &model.PathRewrite{Replace: replace, Prefix: true, Strip: 2}}},
				{Backends: one("gwh_a"), Ext: &model.HTTPActionExt{Path: &model.PathRewrite{Replace: "/", Prefix: true, Strip: 1}}},
				{Backends: one("gwh_a"), Ext: &model.HTTPActionExt{Path: &model.PathRewrite{Replace: replace}, Host: "rewritten.example.org"}},
				{Redirect: &model.Redirect{Scheme: "http", Code: 302}, Ext: &model.HTTPActionExt{Path: &model.PathRewrite{Replace: replace, Prefix: true, Strip: 1}}},
				{Backends: one("gwh_a"), Ext: &model.HTTPActionExt{Response: model.HeaderMods{Set: []model.HeaderValue{{Name: "x-set", Value: animal}},
					Add: []model.HeaderValue{{Name: "x-echo", Value: "added"}}, Remove: []string{"x-gone"}}}},
				{Backends: []model.WeightedBackend{{Name: "gwh_a", Weight: 1}, {Name: "gwh_b", Weight: 1}},
					Ext: &model.HTTPActionExt{BackendMods: []model.HeaderMods{set("backend", "to-A-"+animal), set("backend", "to-B-"+animal)}}},
				{Backends: one("gwh_a"), Ext: &model.HTTPActionExt{Timeout: timeout}},
			}})
	}
	type req struct {
		path    string
		headers []string
		status  int
		body    string
	}
	check := func(step string, reqs []req) {
		t.Helper()
		for _, r := range reqs {
			status, body := extGet(t, addr, r.path, r.headers...)
			if status != r.status || !strings.HasPrefix(body, r.body) {
				t.Errorf("%s: GET %s %v: %d %q, want %d %q", step, r.path, r.headers, status, body, r.status, r.body)
			}
		}
	}
	if _, err := d.Apply(ctx, cfgOf(table("whale", "/one", 300*time.Millisecond))); err != nil {
		t.Fatal(err)
	}
	check("first", []req{
		{"/q?animal=whale", nil, 200, "A /q?animal=whale"},
		{"/q?x=1&animal=whale&animal=dolphin", nil, 200, "A"},
		{"/q?animal=dolphin&animal=whale", nil, 200, "B"}, // the first occurrence only
		{"/q?animal=Whale", nil, 200, "B"},
		{"/q?ANIMAL=whale", nil, 200, "B"},
		{"/prefix/one/two?x=1", nil, 200, "A /one/two?x=1 "},
		{"/prefix/one/", nil, 200, "A /one/ "},
		{"/prefix/one", nil, 200, "A /one "},
		{"/strip/three", nil, 200, "A /three "},
		{"/strip", nil, 200, "A / "},
		{"/full/a/b?y=2", nil, 200, "A /one?y=2 host=rewritten.example.org "},
		{"/moved/here?z=3", nil, 302, "http://a.example.com/one/here?z=3"},
		{"/moved", nil, 302, "http://a.example.com/one"},
		{"/response", nil, 200, "A /response host=a.example.com backend= resp=echo+added,whale,"},
		{"/slow?delay=10ms", nil, 200, "A"},
		{"/slow?delay=1s", nil, 504, ""},
	})
	for range 20 {
		_, body := extGet(t, addr, "/split", "Backend: from-client")
		if want := "to-" + body[:1] + "-whale"; !strings.Contains(body, "backend="+want+" ") {
			t.Fatalf("split: %q, want backend=%s", body, want)
		}
	}
	reloads := l.reloads(ctx, t)
	if _, err := d.Apply(ctx, cfgOf(table("dolphin", "/two/", 0))); err != nil {
		t.Fatal(err)
	}
	check("second", []req{
		{"/q?animal=whale", nil, 200, "B"},
		{"/q?animal=dolphin", nil, 200, "A"},
		{"/prefix/one/two", nil, 200, "A /two/two "},
		{"/full/a", nil, 200, "A /two/ "},
		{"/moved/here", nil, 302, "http://a.example.com/two/here"},
		{"/response", nil, 200, "A /response host=a.example.com backend= resp=echo+added,dolphin,"},
		{"/slow?delay=1s", nil, 200, "A"}, // no timeout of its own: the backend's
	})
	if got := l.reloads(ctx, t); got != reloads {
		t.Errorf("%d reloads for changed values, want 0", got-reloads)
	}
}
