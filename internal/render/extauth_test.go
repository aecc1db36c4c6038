package render

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// An action's external authentication is one access map entry: its
// settings in base64, or "-" (answered 500 by the Lua action) when they
// are not valid, so an action is never served unasked.
func TestExtAuthEntries(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    *model.ExtAuth
		want string // the decoded value; "" for no entry
	}{
		{"none", nil, ""},
		{"valid", &model.ExtAuth{Method: "GET", URL: "http://a.example/x", Headers: []string{"x-a", "x-b"}}, "GET\nhttp://a.example/x\nx-a,x-b\n\n"},
		{"with sign-in", &model.ExtAuth{Method: "HEAD", URL: "http://a.example/x", SignIn: "https://s.example/?a=b"}, "HEAD\nhttp://a.example/x\n\nhttps://s.example/?a=b\n"},
		{"nginx variables (expanded by the Lua action)", &model.ExtAuth{Method: "GET", URL: "https://$host/oauth2/auth", SignIn: "https://$host/oauth2/start?rd=$escaped_request_uri"},
			"GET\nhttps://$host/oauth2/auth\n\nhttps://$host/oauth2/start?rd=$escaped_request_uri\n"},
		// A Service's backend: the Lua action asks the internal frontend in
		// clear; the backend of an https URL speaks TLS itself.
		{"a Service over https", &model.ExtAuth{Method: "GET", URL: "https://auth.ns.svc:8443/x", Backend: "ing_ns_auth_8443_s1"},
			"GET\nhttp://auth.ns.svc:8443/x\n\n\ning_ns_auth_8443_s1"},
		{"a Service over http", &model.ExtAuth{Method: "GET", URL: "http://auth.ns.svc/x", Backend: "ing_ns_auth_80"}, "GET\nhttp://auth.ns.svc/x\n\n\ning_ns_auth_80"},
		{"https without a backend", &model.ExtAuth{Method: "GET", URL: "https://auth.example/x"}, "GET\nhttps://auth.example/x\n\n\n"},
		{"HAProxy Ingress's settings: four more lines", &model.ExtAuth{Method: "*", URL: "http://a.example/x", Pass: []string{"*"}, Fail: []string{"x-reason"}},
			"*\nhttp://a.example/x\n\n\n\n\n*\nx-reason\n"},
		{"a pattern that is not valid", &model.ExtAuth{Method: "GET", URL: "http://a.example/x", Send: []string{"x a"}}, "-"},
		{"an unknown variable", &model.ExtAuth{Method: "GET", URL: "https://$hostname/auth"}, "-"},
		{"a URL that is not valid", &model.ExtAuth{Method: "GET", URL: "http://a.example/x\nglobal"}, "-"},
		{"a method that is not valid", &model.ExtAuth{Method: "GET\n", URL: "http://a.example/x"}, "-"},
	} {
		rel := map[string][]HTTPMapEntry{}
		extAuthEntries(rel, tc.a)
		es := rel[HTTPAccessMap]
		if tc.want == "" {
			if len(es) != 0 {
				t.Errorf("%s: entries %v, want none", tc.name, es)
			}
			continue
		}
		if len(es) != 1 || es[0].Key != idHole+".x" {
			t.Fatalf("%s: entries %v, want one %s.x", tc.name, es, idHole)
		}
		got, err := base64.StdEncoding.DecodeString(es[0].Value)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: value %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
}

// The Lua file is loaded only where a frontend writes the access rules,
// and without a path for it such a request is answered 500.
func TestExtAuthLoaded(t *testing.T) {
	cfg := httpAccess()
	o := opts
	o.ACLDir = goldenACLDir
	text := string(Config(cfg, nil, o))
	if !ExtAuthLoaded(cfg, o) || !strings.Contains(text, "\tlua-load "+goldenACLDir+"/extauth.lua\n") {
		t.Error("a frontend with access: no lua-load")
	}
	if !strings.Contains(text, "frontend _extauth\n\tmode http\n\tbind unix@"+goldenACLDir+"/extauth.sock mode 600\n") {
		t.Error("a frontend with access: no internal frontend on the socket")
	}
	long := o
	long.ACLDir = "/var/lib/" + strings.Repeat("d", 80)
	if ExtAuthSocket(long.ACLDir) != "" || strings.Contains(string(Config(cfg, nil, long)), "frontend _extauth") {
		t.Error("a socket path too long for a unix socket written")
	}
	for i := range cfg.Frontends[0].HTTP.Actions {
		cfg.Frontends[0].HTTP.Actions[i].Access = nil
	}
	model.Shaped(cfg.Frontends[0].HTTP)
	if text := string(Config(cfg, nil, o)); ExtAuthLoaded(cfg, o) || strings.Contains(text, "lua-load") || strings.Contains(text, "_extauth") {
		t.Error("no frontend with access: lua-load or the internal frontend written")
	}
	var b strings.Builder
	writeExtAuth(func(p ...string) { b.WriteString(strings.Join(p, " ") + "\n") }, "m", false, false)
	if !strings.Contains(b.String(), "return status 500 if { var(txn.ax) -m found }") || strings.Contains(b.String(), "lua.") {
		t.Errorf("without the Lua file:\n%s", b.String())
	}
}

// An action's auth-tls-match-cn is one access map entry, the expression
// in base64, or "(" (which does not compile: every request 403) when it
// is not valid; the rules ask the Lua action only where a client
// certificate can be (a frontend terminating TLS) and the Lua file is
// loaded, and answer 403 elsewhere.
func TestMatchCN(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    *model.HTTPAccess
		want string // the decoded value; "" for no entry
	}{
		{"none", nil, ""},
		{"no expression", &model.HTTPAccess{MaxBody: 1}, ""},
		{"an expression", &model.HTTPAccess{MatchCN: "^CN=(alice|bob)$"}, "^CN=(alice|bob)$"},
		{"one that is not valid", &model.HTTPAccess{MatchCN: "(a+)+"}, "("},
	} {
		rel := map[string][]HTTPMapEntry{}
		matchCNEntry(rel, tc.a)
		es := rel[HTTPAccessMap]
		if tc.want == "" {
			if len(es) != 0 {
				t.Errorf("%s: entries %v, want none", tc.name, es)
			}
			continue
		}
		if len(es) != 1 || es[0].Key != idHole+".s" {
			t.Errorf("%s: entries %v, want one %s.s", tc.name, es, idHole)
			continue
		}
		if b, err := base64.StdEncoding.DecodeString(es[0].Value); err != nil || string(b) != tc.want {
			t.Errorf("%s: %q (%v), want %q", tc.name, b, err, tc.want)
		}
	}
	for _, tc := range []struct {
		loaded, tls bool
		want, not   string
	}{
		{true, true, "lua.hks_cn if { var(txn.an) -m found }", "return status 403 if { var(txn.an)"},
		{true, false, "return status 403 if { var(txn.an) -m found }", "hks_cn"},
		{false, true, "return status 403 if { var(txn.an) -m found }", "hks_cn"},
	} {
		var b strings.Builder
		writeExtAuth(func(p ...string) { b.WriteString(strings.Join(p, " ") + "\n") }, "m", tc.loaded, tc.tls)
		if !strings.Contains(b.String(), tc.want) || strings.Contains(b.String(), tc.not) || strings.Contains(b.String(), "ssl_c_s_dn") != tc.tls {
			t.Errorf("loaded %v, TLS %v:\n%s", tc.loaded, tc.tls, b.String())
		}
	}
}
