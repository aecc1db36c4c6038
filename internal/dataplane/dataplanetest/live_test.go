package dataplanetest

import (
	"fmt"
	"maps"
	"testing"
)

// Versioned PUTs outside a transaction that the API applies at runtime,
// as measured on the real API v3.4.0 (docs/dataplane.md): 200 without a
// Reload-Id and no reload, though haproxy.cfg is written and the version
// bumps; anything else 202, a Reload-Id and one reload.
func TestLivePuts(t *testing.T) {
	c := start(t)
	srv := Object{"name": "s1", "address": "127.81.30.1", "port": 8080, "weight": 10, "check": "enabled", "health_check_port": 8081,
		"agent-check": "enabled", "agent-port": 9999, "agent-addr": "127.0.0.3", "agent-send": "hello", "agent-inter": 3600000}
	fe := Object{"name": "fe_l", "mode": "tcp", "default_backend": "be_ingress", "maxconn": 100, "client_timeout": 60000}
	for _, step := range []struct {
		what, path string
		body       Object
		put        Object // fields to set (nil value: removed)
		live       bool
	}{
		{"server PUT", "backends/be_ingress/servers/s1", srv, nil, false}, // s1 had no check: not live
		{"server unchanged", "backends/be_ingress/servers/s1", srv, nil, true},
		{"server weight", "backends/be_ingress/servers/s1", srv, Object{"weight": 20}, true},
		{"server address", "backends/be_ingress/servers/s1", srv, Object{"address": "127.81.30.2"}, true},
		{"server port", "backends/be_ingress/servers/s1", srv, Object{"port": 8090}, true},
		{"server maintenance", "backends/be_ingress/servers/s1", srv, Object{"maintenance": "enabled"}, true},
		{"server agent-check", "backends/be_ingress/servers/s1", srv, Object{"agent-check": "disabled"}, true},
		{"server agent-check back", "backends/be_ingress/servers/s1", srv, Object{"agent-check": "enabled"}, true},
		{"server agent-check again", "backends/be_ingress/servers/s1", srv, Object{"agent-check": "disabled"}, true},
		{"server agent-addr", "backends/be_ingress/servers/s1", srv, Object{"agent-addr": "127.0.0.4"}, true},
		{"server agent-send, agent disabled", "backends/be_ingress/servers/s1", srv, Object{"agent-send": "bye"}, false},
		{"server agent-check enabled, none running", "backends/be_ingress/servers/s1", srv, Object{"agent-check": "enabled"}, false},
		{"server agent-send", "backends/be_ingress/servers/s1", srv, Object{"agent-send": "hello2"}, true},
		{"server health_check_port", "backends/be_ingress/servers/s1", srv, Object{"health_check_port": 8082}, true},
		{"server live fields together", "backends/be_ingress/servers/s1", srv, Object{"weight": 30, "agent-addr": "127.0.0.5", "health_check_port": 8083}, true},
		{"server agent-check removed", "backends/be_ingress/servers/s1", srv, Object{"agent-check": nil}, true},
		{"server inter", "backends/be_ingress/servers/s1", srv, Object{"inter": 3000}, false},
		{"server agent-port", "backends/be_ingress/servers/s1", srv, Object{"agent-port": 9998}, false},
		{"server weight and inter", "backends/be_ingress/servers/s1", srv, Object{"weight": 40, "inter": 4000}, false},
		{"server weight removed", "backends/be_ingress/servers/s1", srv, Object{"weight": nil}, false},
		{"server without a port: address", "backends/be_ingress/servers/s1", srv, Object{"port": nil, "address": "127.81.30.9"}, false},
		{"server without a port: unchanged", "backends/be_ingress/servers/s1", nil, nil, true},
		{"server without an agent: agent-check disabled", "backends/be_ingress/servers/s1", nil, Object{"agent-check": nil, "agent-port": nil}, false},
		{"server without an agent: agent-check disabled", "backends/be_ingress/servers/s1", nil, Object{"agent-check": "disabled"}, true},
		{"server port added", "backends/be_ingress/servers/s1", nil, Object{"port": 80, "address": "127.81.30.8"}, true},
		{"frontend unchanged", "frontends/fe_l", fe, nil, true},
		{"frontend maxconn", "frontends/fe_l", fe, Object{"maxconn": 200}, true},
		{"frontend maxconn removed", "frontends/fe_l", fe, Object{"maxconn": nil}, false},
		{"frontend maxconn added", "frontends/fe_l", fe, Object{"maxconn": 300}, true},
		{"frontend client_timeout", "frontends/fe_l", fe, Object{"client_timeout": 50000}, false},
		{"frontend maxconn and client_timeout", "frontends/fe_l", fe, Object{"maxconn": 400, "client_timeout": 40000}, false},
		{"backend unchanged", "backends/be_ingress", nil, nil, false},
	} {
		if step.what == "frontend unchanged" {
			st, _ := c.do("POST", fmt.Sprintf("configuration/frontends?version=%d", c.s.Version()), fe)
			c.want("frontend POST", st, 202)
		}
		body := step.body
		if body == nil || step.put != nil || step.live {
			_, got := c.do("GET", "configuration/"+step.path, nil)
			body = maps.Clone(Object(got.(map[string]any)))
		}
		for k, v := range step.put {
			if v == nil {
				delete(body, k)
			} else {
				body[k] = v
			}
		}
		v, r := c.s.Version(), c.s.Reloads()
		st, _ := c.do("PUT", fmt.Sprintf("configuration/%s?version=%d", step.path, v), body)
		want, wantReloads := 202, r+1
		if step.live {
			want, wantReloads = 200, r
		}
		c.want(step.what, st, want)
		if id := c.hdr.Get("Reload-Id"); (id != "") == step.live {
			t.Errorf("%s: Reload-Id %q", step.what, id)
		}
		if c.s.Version() != v+1 {
			t.Errorf("%s: version %d, want %d", step.what, c.s.Version(), v+1)
		}
		c.waitReloads(wantReloads)
	}
	if fe := c.s.running.frontends.m["fe_l"]; fmt.Sprint(fe["maxconn"]) != "400" {
		t.Errorf("running frontend %v", fe)
	}
}

// With full_section=true the API compares only the frontend's own fields:
// a rule or a bind added alone is written and answered 200 with no
// reload, so HAProxy does not run it until it next reloads (measured).
func TestLiveFrontendFullSection(t *testing.T) {
	c := start(t)
	fe := Object{"name": "fe_l", "mode": "tcp", "default_backend": "be_ingress", "maxconn": 100,
		"binds": map[string]any{"b1": map[string]any{"name": "b1", "address": "127.81.30.1", "port": 18099}}}
	st, _ := c.do("POST", fmt.Sprintf("configuration/frontends?full_section=true&version=%d", c.s.Version()), fe)
	c.want("POST", st, 202)
	c.waitReloads(1)
	rule := []any{map[string]any{"type": "connection", "action": "reject", "cond": "unless", "cond_test": "{ src 127.0.0.0/8 }"}}
	for _, step := range []struct {
		what string
		set  func(o map[string]any)
	}{
		{"unchanged", func(map[string]any) {}},
		{"rule added", func(o map[string]any) { o["tcp_request_rule_list"] = rule }},
		{"maxconn", func(o map[string]any) { o["maxconn"] = 500 }},
		{"rule removed", func(o map[string]any) { delete(o, "tcp_request_rule_list") }},
		{"bind added", func(o map[string]any) {
			o["binds"].(map[string]any)["b2"] = map[string]any{"name": "b2", "address": "127.81.30.1", "port": 18098}
		}},
	} {
		_, got := c.do("GET", "configuration/frontends/fe_l?full_section=true", nil)
		body := got.(map[string]any)
		step.set(body)
		st, _ := c.do("PUT", fmt.Sprintf("configuration/frontends/fe_l?full_section=true&version=%d", c.s.Version()), body)
		c.want(step.what, st, 200)
		if id := c.hdr.Get("Reload-Id"); id != "" || c.s.Reloads() != 1 {
			t.Errorf("%s: Reload-Id %q, reloads %d", step.what, id, c.s.Reloads())
		}
		if step.what == "rule added" && c.s.running.frontends.m["fe_l"]["tcp_request_rule_list"] != nil {
			t.Errorf("the rule runs without a reload")
		}
	}
	_, got := c.do("GET", "configuration/frontends/fe_l?full_section=true", nil)
	if b, _ := got.(map[string]any)["binds"].(map[string]any); len(b) != 2 {
		t.Errorf("binds written: %v", got)
	}
	if b := c.s.running.binds["fe_l"]; b.len() != 1 {
		t.Errorf("running binds %v, want b1 only", b.names)
	}
}
