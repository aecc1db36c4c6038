package dataplanetest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// raw sends a raw configuration request.
func (c *tc) raw(method, query, text string) (int, string) {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.s.URL+"/v3/services/haproxy/configuration/raw"+query, strings.NewReader(text))
	req.SetBasicAuth("u", "p")
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	c.hdr = resp.Header
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The raw configuration as measured: GET is text with the version; a
// stale POST is 409, an unknown keyword 400 and nothing changes;
// skip_reload writes (201, version + 1) and HAProxy runs what it ran; a
// POST without it reloads (202, Reload-Id); the objects read back as the
// JSON endpoints serve them.
func TestRawConfiguration(t *testing.T) {
	c := start(t)
	st, text := c.raw("GET", "", "")
	c.want("GET raw", st, 200)
	v := c.hdr.Get("Configuration-Version")
	if !strings.Contains(text, "backend be_ingress from unnamed_defaults_1") || !strings.Contains(text, "server s1 127.81.30.1:8080") {
		t.Fatalf("raw:\n%s", text)
	}
	add := text + "\nbackend be_x\n  mode tcp\n  balance source\n  hash-type consistent\n  timeout server 1m\n  stick-table type ipv6 size 1m expire 3h\n  stick on src\n" +
		"  default-server check inter 2s rise 2 fall 3\n  server s1 127.81.30.2:80 disabled\n  server s2 [2001:db8::1]:80\n" +
		"\nfrontend fe_x\n  mode tcp\n  bind 127.81.30.3:80 name a transparent\n  tcp-request session reject unless { src 192.0.2.0/24 }\n  default_backend be_x\n"
	st, _ = c.raw("POST", "?version=0&skip_reload=true", add)
	c.want("stale", st, 409)
	st, _ = c.raw("POST", "?version="+v+"&skip_reload=true", add+"  bogus keyword\n")
	c.want("unknown keyword", st, 400)
	st, _ = c.raw("POST", "?version="+v+"&skip_reload=true", add)
	c.want("skip_reload", st, 201)
	if _, ok := c.s.Running("be_x"); ok || c.s.Reloads() != 0 {
		t.Errorf("skip_reload: HAProxy runs be_x, or reloaded")
	}
	st, be := c.do("GET", "configuration/backends/be_x?full_section=true", nil)
	c.want("GET be_x", st, 200)
	b := be.(map[string]any)
	if b["server_timeout"] != float64(60000) || b["stick_table"].(map[string]any)["expire"] != float64(10800000) ||
		b["servers"].(map[string]any)["s1"].(map[string]any)["maintenance"] != "enabled" ||
		b["servers"].(map[string]any)["s2"].(map[string]any)["address"] != "2001:db8::1" {
		t.Errorf("be_x read back: %v", b)
	}
	_, rules := c.do("GET", "configuration/frontends/fe_x/tcp_request_rules", nil)
	if r := rules.([]any); len(r) != 1 || r[0].(map[string]any)["action"] != "accept" {
		t.Errorf("a session reject reads back as %v; the real API says accept", rules)
	}
	_, text = c.raw("GET", "", "")
	st, _ = c.raw("POST", "?version="+c.hdr.Get("Configuration-Version"), text)
	c.want("reload", st, 202)
	if c.hdr.Get("Reload-Id") == "" {
		t.Errorf("no Reload-Id")
	}
}

// Servers that follow another (track) and an agent check, as text: read
// back as the JSON endpoints serve them (measured: agent-inter in ms,
// track as written, the check's port as health_check_port, option httpchk
// as adv_check with its parameters), and what HAProxy refuses of a track
// is a 400.
func TestRawTrackAndAgent(t *testing.T) {
	c := start(t)
	_, text := c.raw("GET", "", "")
	v := c.hdr.Get("Configuration-Version")
	add := text + "\nbackend _nodes\n  mode tcp\n  default-server agent-check agent-addr 127.0.0.1 agent-port 1 agent-inter 1h\n  server s1 127.81.30.2:8080\n" +
		"\nbackend be_c\n  mode tcp\n  option httpchk GET /healthz\n  http-check expect status 200\n  default-server check inter 2s port 10256\n  server s1 127.81.30.2:80\n" +
		"\nbackend be_t\n  mode tcp\n  server s1 127.81.30.2:30080 track _nodes/s1\n  server s2 127.81.30.2:30081 track be_c/s1\n"
	for _, bad := range []string{"  server s3 127.81.30.2:1 track _nodes/s9\n", "  server s3 127.81.30.2:1 check track _nodes/s1\n",
		"  server s3 127.81.30.2:1 track be_t/s1\n  server s4 127.81.30.2:1 track be_x/s1\n"} {
		if st, msg := c.raw("POST", "?version="+v+"&skip_reload=true", add+bad); st != 400 || !strings.Contains(msg, "track") {
			t.Errorf("%q: %d %s, want 400 naming the track", bad, st, msg)
		}
	}
	st, _ := c.raw("POST", "?version="+v+"&skip_reload=true", add)
	c.want("track", st, 201)
	_, n := c.do("GET", "configuration/backends/_nodes", nil)
	if ds := n.(map[string]any)["default_server"].(map[string]any); ds["agent-check"] != "enabled" || ds["agent-inter"] != float64(3600000) ||
		ds["agent-port"] != float64(1) || ds["agent-addr"] != "127.0.0.1" {
		t.Errorf("_nodes default_server read back as %v", ds)
	}
	_, bc := c.do("GET", "configuration/backends/be_c?full_section=true", nil)
	if b := bc.(map[string]any); b["adv_check"] != "httpchk" || b["httpchk_params"].(map[string]any)["uri"] != "/healthz" ||
		b["default_server"].(map[string]any)["health_check_port"] != float64(10256) || len(b["http_check_list"].([]any)) != 1 {
		t.Errorf("be_c read back as %v", b)
	}
	_, s1 := c.do("GET", "configuration/backends/be_t/servers/s1", nil)
	if s1.(map[string]any)["track"] != "_nodes/s1" {
		t.Errorf("be_t/s1 read back as %v", s1)
	}
}
