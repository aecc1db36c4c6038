package dataplaneapi

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Nothing a user could put in a name, an address or a range reaches the
// raw configuration: every value outside the renderer's grammar makes the
// section not renderable (it then goes through the JSON endpoints).
func TestRawRefusesWhatIsNotItsGrammar(t *testing.T) {
	good := func() *section {
		return &section{
			base: Object{"name": "be_ns_web_80", "mode": "tcp", "balance": map[string]any{"algorithm": "roundrobin"},
				"default_server": map[string]any{"check": "enabled", "inter": int64(2000)}},
			children: []Object{{"name": "s1", "address": "127.0.0.1", "port": int64(1), "maintenance": "enabled"}},
		}
	}
	fe := func() *section {
		return &section{
			base: Object{"name": "fe_ns_web_80", "mode": "tcp", "default_backend": "be_ns_web_80",
				"tcp_request_rule_list": []any{map[string]any{"type": "connection", "action": "reject", "cond": "unless", "cond_test": "{ src ::ffff:0:0/96 } { src 192.0.2.0/24 }"}}},
			children: []Object{{"name": "all_80", "address": "*", "port": int64(80)}},
		}
	}
	if ls, err := sectionText("backend", good()); err != nil || !strings.Contains(strings.Join(ls, "\n"), "server s1 127.0.0.1:1 disabled") {
		t.Fatalf("backend: %q %v", ls, err)
	}
	if ls, err := sectionText("frontend", fe()); err != nil || !strings.Contains(strings.Join(ls, "\n"), "tcp-request connection reject unless { src ::ffff:0:0/96 } { src 192.0.2.0/24 }") {
		t.Fatalf("frontend: %q %v", ls, err)
	}
	v6 := fe()
	v6.children = []Object{{"name": "[2001:db8::1]:443", "address": "2001:db8::1", "port": int64(443)}}
	if ls, err := sectionText("frontend", v6); err != nil || !strings.Contains(strings.Join(ls, "\n"), "bind [2001:db8::1]:443 name [2001:db8::1]:443") {
		t.Fatalf("IPv6 bind: %q %v", ls, err)
	}
	// _nodes with the node check, and a backend following it.
	nodes := &section{base: Object{"name": "_nodes", "mode": "tcp", "adv_check": "httpchk",
		"httpchk_params":  map[string]any{"method": "GET", "uri": "/healthz"},
		"http_check_list": []any{map[string]any{"type": "expect", "match": "status", "pattern": "200"}},
		"default_server":  map[string]any{"check": "enabled", "inter": int64(2000), "health_check_port": int64(10256)}},
		children: []Object{{"name": "s1", "address": "192.0.2.1"}}}
	if ls, err := sectionText("backend", nodes); err != nil || !strings.Contains(strings.Join(ls, "\n"),
		"option httpchk GET /healthz\n  http-check expect status 200\n  default-server check port 10256 inter 2000") {
		t.Fatalf("_nodes: %q %v", ls, err)
	}
	agent := &section{base: Object{"name": "_nodes", "mode": "tcp", "default_server": agentNever(time.Hour)}, children: nodes.children}
	if ls, err := sectionText("backend", agent); err != nil || !strings.Contains(strings.Join(ls, "\n"), "default-server agent-addr 127.0.0.1 agent-check agent-inter 3600000 agent-port 1") {
		t.Fatalf("_nodes with the agent: %q %v", ls, err)
	}
	follower := good()
	follower.children[0]["track"] = "_nodes/s1"
	if ls, err := sectionText("backend", follower); err != nil || !strings.Contains(strings.Join(ls, "\n"), "server s1 127.0.0.1:1 disabled track _nodes/s1") {
		t.Fatalf("follower: %q %v", ls, err)
	}
	for _, tc := range []struct {
		name string
		kind string
		edit func(*section)
	}{
		{"track with a keyword", "backend", func(s *section) { s.children[0]["track"] = "_nodes/s1 check" }},
		{"track without a server", "backend", func(s *section) { s.children[0]["track"] = "_nodes" }},
		{"agent address not an IP", "backend", func(s *section) {
			s.base["default_server"] = map[string]any{"agent-check": "enabled", "agent-addr": "x y"}
		}},
		{"httpchk path with a space", "backend", func(s *section) {
			s.base["adv_check"], s.base["httpchk_params"] = "httpchk", map[string]any{"method": "GET", "uri": "/x HTTP/1.1\r\nHost: y"}
			s.base["http_check_list"] = []any{map[string]any{"type": "expect", "match": "status", "pattern": "200"}}
		}},
		{"http check that accepts anything", "backend", func(s *section) {
			s.base["adv_check"], s.base["httpchk_params"] = "httpchk", map[string]any{"method": "GET", "uri": "/x"}
			s.base["http_check_list"] = []any{map[string]any{"type": "expect", "match": "rstatus", "pattern": ".*"}}
		}},
		{"http checks without httpchk", "backend", func(s *section) {
			s.base["http_check_list"] = []any{map[string]any{"type": "expect", "match": "status", "pattern": "200"}}
		}},
		{"name with a newline", "backend", func(s *section) { s.base["name"] = "be_x\n  server evil 1.2.3.4:80" }},
		{"name with a space", "backend", func(s *section) { s.base["name"] = "be_x use_backend y" }},
		{"from with a hash", "backend", func(s *section) { s.base["from"] = "d#x" }},
		{"server address not an IP", "backend", func(s *section) { s.children[0]["address"] = "evil.example" }},
		{"server address with a keyword", "backend", func(s *section) { s.children[0]["address"] = "127.0.0.1 backup" }},
		{"server name with a space", "backend", func(s *section) { s.children[0]["name"] = "s1 check" }},
		{"unknown server field", "backend", func(s *section) { s.children[0]["ssl"] = "enabled" }},
		{"unknown backend field", "backend", func(s *section) { s.base["http_request_rule_list"] = []any{} }},
		{"balance not an algorithm", "backend", func(s *section) { s.base["balance"] = map[string]any{"algorithm": "roundrobin\n  mode http"} }},
		{"negative timeout", "backend", func(s *section) { s.base["server_timeout"] = int64(-1) }},
		{"default-server value", "backend", func(s *section) { s.base["default_server"] = map[string]any{"check": "enabled\n"} }},
		{"range not a prefix", "frontend", func(s *section) {
			s.base["tcp_request_rule_list"] = []any{map[string]any{"type": "connection", "action": "reject", "cond": "unless", "cond_test": "{ src 0.0.0.0/0 } || { always_true }"}}
		}},
		{"rule that accepts", "frontend", func(s *section) {
			s.base["tcp_request_rule_list"] = []any{map[string]any{"type": "connection", "action": "accept", "cond": "unless", "cond_test": "{ src 192.0.2.0/24 }"}}
		}},
		{"default_backend with a space", "frontend", func(s *section) { s.base["default_backend"] = "be x" }},
		{"bind address", "frontend", func(s *section) { s.children[0]["address"] = "127.0.0.1 ssl crt /x" }},
		{"bind name not an address", "frontend", func(s *section) { s.children[0]["name"] = "[x] ssl" }},
		{"bind name with a zone", "frontend", func(s *section) { s.children[0]["name"] = "[fe80::1%lo]:80" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good()
			if tc.kind == "frontend" {
				s = fe()
			}
			tc.edit(s)
			if ls, err := sectionText(tc.kind, s); !errors.Is(err, errNotRenderable) {
				t.Errorf("rendered %q (%v), want errNotRenderable", ls, err)
			}
		})
	}
}

func TestEditRaw(t *testing.T) {
	in := "# _version=3\n\nglobal\n  maxconn 10\n\nfrontend fe_a\n  mode tcp\n\nbackend be_a\n  mode tcp\n  server s1 127.0.0.1:1\n\nbackend be_b\n  mode tcp\n"
	got := editRaw(in, map[string][]string{"backend be_a": {"backend be_a", "  mode http"}, "backend be_b": nil, "backend be_c": {"backend be_c"}},
		[]string{"backend be_a", "backend be_c"})
	want := "# _version=3\n\nglobal\n  maxconn 10\n\nfrontend fe_a\n  mode tcp\n\nbackend be_a\n  mode http\n\n\nbackend be_c\n\n"
	if got != want {
		t.Errorf("editRaw:\n%s\nwant:\n%s", got, want)
	}
}
