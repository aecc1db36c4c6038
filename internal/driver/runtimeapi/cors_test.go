package runtimeapi

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// corsDo sends one request to addr (method, path, headers "name: value")
// and returns the status, the response's Access-Control-* headers as
// "name=value" lines sorted as HAProxy wrote them, and its Vary.
func corsDo(t *testing.T, addr, method, path string, headers ...string) (int, string) {
	t.Helper()
	resp := hostDo(t, method, addr, path, headers...)
	defer resp.Body.Close()
	var got []string
	for _, n := range []string{"Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Access-Control-Allow-Methods",
		"Access-Control-Allow-Headers", "Access-Control-Expose-Headers", "Access-Control-Max-Age", "Vary"} {
		if v := resp.Header.Values(n); len(v) > 0 {
			got = append(got, strings.ToLower(strings.TrimPrefix(n, "Access-Control-"))+"="+strings.Join(v, ";"))
		}
	}
	return resp.StatusCode, strings.Join(got, " ")
}

// TestCORSWithoutReload: CORS policies on a real HAProxy with real
// requests: a preflight is answered by HAProxy (the backend never sees
// it), allowed or not; an allowed origin (exact, wildcard of one label
// or more, any) is echoed on the preflight and on the backend's answer,
// with credentials, methods, headers (or the ones asked for, for "*"),
// exposed headers and max age; an origin not allowed gets no header.
// Then a policy changed, added and removed: no reload.
func TestCORSWithoutReload(t *testing.T) {
	l := startMapLab(t)
	d := l.d
	ctx := context.Background()

	var seen atomic.Int64
	count := func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		w.Header().Set("Access-Control-Max-Age", "from-backend") // replaced only on a preflight, which never comes here
		w.WriteHeader(200)
	}
	a, b := serveHTTP(t, count), serveHTTP(t, count)
	addr, cfgOf := twoBackends(t, a, b)
	table := func(origin string, credentials bool, third *model.CORS) *model.HTTP {
		ext := func(c *model.CORS) *model.HTTPActionExt {
			if c == nil {
				return nil
			}
			return &model.HTTPActionExt{CORS: c}
		}
		return model.Shaped(&model.HTTP{Port: 80, Hosts: []model.HTTPHost{{Name: model.AnyHost, Rules: []model.HTTPRule{
			{PathType: model.PathPrefix, Path: "/cors-1", Action: 0},
			{PathType: model.PathPrefix, Path: "/any", Action: 1},
			{PathType: model.PathPrefix, Path: "/", Action: 2},
		}}}, Actions: []model.HTTPAction{
			{Backends: one("gwh_a"), Ext: ext(&model.CORS{Origins: []string{"https://www.foo.com", origin}, Credentials: credentials,
				Methods: []string{"GET", "OPTIONS"}, Headers: []string{"x-header-1", "x-header-2"}, Expose: []string{"x-header-3"}, MaxAge: 3600})},
			{Backends: one("gwh_b"), Ext: ext(&model.CORS{Origins: []string{model.AnyOrigin}, Methods: []string{model.Wildcard}, Headers: []string{model.Wildcard}})},
			{Backends: one("gwh_a"), Ext: ext(third)},
		}})
	}
	type req struct {
		method, path string
		headers      []string
		status       int
		want         string
		backend      bool // reaches the backend
	}
	pre := func(origin string, more ...string) []string {
		return append([]string{"Origin: " + origin, "Access-Control-Request-Method: GET"}, more...)
	}
	check := func(step string, reqs []req) {
		t.Helper()
		for _, r := range reqs {
			before := seen.Load()
			status, got := corsDo(t, addr, r.method, r.path, r.headers...)
			if status != r.status || got != r.want {
				t.Errorf("%s: %s %s %v:\n  %d %s\nwant\n  %d %s", step, r.method, r.path, r.headers, status, got, r.status, r.want)
			}
			if reached := seen.Load() != before; reached != r.backend {
				t.Errorf("%s: %s %s %v: reached the backend %v, want %v", step, r.method, r.path, r.headers, reached, r.backend)
			}
		}
	}
	if _, err := d.Apply(ctx, cfgOf(table("https://*.bar.com", true, nil))); err != nil {
		t.Fatal(err)
	}
	const full = "allow-origin=%s allow-credentials=true allow-methods=GET,OPTIONS allow-headers=x-header-1,x-header-2 expose-headers=x-header-3 max-age=3600 vary=origin"
	check("first", []req{
		{"OPTIONS", "/cors-1", pre("https://www.foo.com", "Access-Control-Request-Headers: x-header-1"), 204, strings.ReplaceAll(full, "%s", "https://www.foo.com"), false},
		{"OPTIONS", "/cors-1", pre("https://www.bar.com"), 204, strings.ReplaceAll(full, "%s", "https://www.bar.com"), false},
		{"OPTIONS", "/cors-1", pre("https://xpto.www.bar.com"), 204, strings.ReplaceAll(full, "%s", "https://xpto.www.bar.com"), false},
		{"OPTIONS", "/cors-1", pre("HTTPS://WWW.Foo.com"), 204, strings.ReplaceAll(full, "%s", "HTTPS://WWW.Foo.com"), false},
		{"OPTIONS", "/cors-1", pre("https://bar.com"), 204, "vary=origin", false},
		{"OPTIONS", "/cors-1", pre("http://www.bar.com"), 204, "vary=origin", false},
		{"OPTIONS", "/cors-1", pre("https://foobar.com"), 204, "vary=origin", false},
		{"OPTIONS", "/cors-1", nil, 200, "max-age=from-backend vary=origin", true}, // no Origin: no preflight
		{"GET", "/cors-1", []string{"Origin: https://www.bar.com"}, 200,
			"allow-origin=https://www.bar.com allow-credentials=true expose-headers=x-header-3 max-age=from-backend vary=origin", true},
		{"GET", "/cors-1", []string{"Origin: https://foobar.com"}, 200, "max-age=from-backend vary=origin", true},
		{"OPTIONS", "/any", pre("https://foobar.com:12345", "Access-Control-Request-Headers: x-a, x-b"), 204,
			"allow-origin=https://foobar.com:12345 allow-methods=GET allow-headers=x-a, x-b vary=origin", false},
		{"PUT", "/any", []string{"Origin: https://foobar.com"}, 200, "allow-origin=https://foobar.com max-age=from-backend vary=origin", true},
		{"OPTIONS", "/other", pre("https://www.foo.com"), 200, "max-age=from-backend", true}, // no policy
	})
	reloads := l.reloads(ctx, t)
	if _, err := d.Apply(ctx, cfgOf(table("http://*", false, &model.CORS{Origins: []string{"https://www.foo.com"}}))); err != nil {
		t.Fatal(err)
	}
	check("second", []req{
		{"OPTIONS", "/cors-1", pre("https://www.bar.com"), 204, "vary=origin", false},
		{"OPTIONS", "/cors-1", pre("http://a.b.example"), 204,
			"allow-origin=http://a.b.example allow-methods=GET,OPTIONS allow-headers=x-header-1,x-header-2 expose-headers=x-header-3 max-age=3600 vary=origin", false},
		{"OPTIONS", "/other", pre("https://www.foo.com"), 204, "allow-origin=https://www.foo.com vary=origin", false},
		{"GET", "/other", []string{"Origin: https://www.foo.com"}, 200, "allow-origin=https://www.foo.com max-age=from-backend vary=origin", true},
	})
	if _, err := d.Apply(ctx, cfgOf(table("https://*.bar.com", true, nil))); err != nil {
		t.Fatal(err)
	}
	check("third", []req{
		{"OPTIONS", "/other", pre("https://www.foo.com"), 200, "max-age=from-backend", true},
	})
	if got := l.reloads(ctx, t); got != reloads {
		t.Errorf("%d reloads for CORS policies changed, added and removed, want 0", got-reloads)
	}
}
