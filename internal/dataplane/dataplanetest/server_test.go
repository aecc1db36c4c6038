package dataplanetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The behaviour below was measured against the real Data Plane API v3.4.0
// with HAProxy 2.6 (docs/dataplane.md); each case pins one fact.

type tc struct {
	t   *testing.T
	s   *Server
	hdr http.Header
}

func start(t *testing.T) *tc {
	s := Start(t, Options{Users: map[string]string{"u": "p"}})
	s.Load([]Section{{Object: Object{"name": "be_ingress", "mode": "tcp", "balance": Object{"algorithm": "roundrobin"}, "from": "unnamed_defaults_1"},
		Children: []Object{{"name": "s1", "address": "127.81.30.1", "port": 8080}}}}, nil)
	return &tc{t: t, s: s}
}

// do sends a request and returns the status and the decoded body.
func (c *tc) do(method, path string, body any) (int, any) {
	c.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, c.s.URL+"/v3/services/haproxy/"+path, rd)
	req.SetBasicAuth("u", "p")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	c.hdr = resp.Header
	var out any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (c *tc) want(what string, got, want int) {
	c.t.Helper()
	if got != want {
		c.t.Errorf("%s: status %d, want %d", what, got, want)
	}
}

func (c *tc) open() string {
	c.t.Helper()
	st, out := c.do("POST", fmt.Sprintf("transactions?version=%d", c.s.Version()), nil)
	c.want("open", st, 201)
	return out.(map[string]any)["id"].(string)
}

func (c *tc) waitReloads(n int) {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.s.Reloads() < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // poll interval
	}
	if got := c.s.Reloads(); got != n {
		c.t.Fatalf("reloads %d, want %d", got, n)
	}
}

func TestAuthAndVersionHeader(t *testing.T) {
	c := start(t)
	resp, err := http.Get(c.s.URL + "/v3/services/haproxy/configuration/backends")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c.want("no credentials", resp.StatusCode, 401)
	st, _ := c.do("GET", "configuration/backends/be_ingress", nil)
	c.want("get", st, 200)
	if c.hdr.Get("Configuration-Version") != fmt.Sprint(c.s.Version()) {
		t.Errorf("Configuration-Version %q", c.hdr.Get("Configuration-Version"))
	}
	st, _ = c.do("GET", "configuration/backends/nope", nil)
	c.want("missing backend", st, 404)
	st, body := c.do("GET", "configuration/backends/be_ingress/servers", nil)
	if st != 200 || body == nil {
		t.Errorf("servers: %d %v", st, body)
	}
}

func TestWritesOutsideTransactions(t *testing.T) {
	c := start(t)
	v := c.s.Version()
	srv := Object{"name": "s1", "address": "127.81.30.2", "port": 8080}
	for _, step := range []struct {
		what    string
		method  string
		path    string
		body    any
		status  int
		reloads int
	}{
		{"neither version nor transaction", "PUT", "configuration/backends/be_ingress/servers/s1", srv, 400, 0},
		{"stale version", "PUT", fmt.Sprintf("configuration/backends/be_ingress/servers/s1?version=%d", v-1), srv, 409, 0},
		{"address only: live", "PUT", fmt.Sprintf("configuration/backends/be_ingress/servers/s1?version=%d", v), srv, 200, 0},
		{"maintenance only: live", "PUT", fmt.Sprintf("configuration/backends/be_ingress/servers/s1?version=%d", v+1),
			Object{"name": "s1", "address": "127.81.30.2", "port": 8080, "maintenance": "enabled", "weight": 10}, 200, 0},
		{"check: reload", "PUT", fmt.Sprintf("configuration/backends/be_ingress/servers/s1?version=%d", v+2),
			Object{"name": "s1", "address": "127.81.30.2", "port": 8080, "check": "enabled"}, 202, 1},
		{"adding a server: reload", "POST", fmt.Sprintf("configuration/backends/be_ingress/servers?version=%d", v+3),
			Object{"name": "s2", "address": "127.81.30.3", "port": 8080}, 202, 2},
		{"exists", "POST", fmt.Sprintf("configuration/backends/be_ingress/servers?version=%d", v+4),
			Object{"name": "s2", "address": "127.81.30.3", "port": 8080}, 409, 2},
		{"schema: bad enum", "POST", fmt.Sprintf("configuration/backends/be_ingress/servers?version=%d", v+4),
			Object{"name": "s3", "address": "127.81.30.3", "check": "yes"}, 422, 2},
		{"schema: port out of range", "POST", fmt.Sprintf("configuration/backends/be_ingress/servers?version=%d", v+4),
			Object{"name": "s3", "address": "127.81.30.3", "port": 70000}, 422, 2},
		{"unknown field accepted", "POST", fmt.Sprintf("configuration/backends/be_ingress/servers?version=%d", v+4),
			Object{"name": "s3", "address": "127.81.30.4", "port": 8080, "no_such_field": 1}, 202, 3},
		{"no such server", "PUT", fmt.Sprintf("configuration/backends/be_ingress/servers/zz?version=%d", v+5), Object{"name": "zz", "address": "127.0.0.1"}, 404, 3},
	} {
		st, _ := c.do(step.method, step.path, step.body)
		c.want(step.what, st, step.status)
		if st == 202 && c.hdr.Get("Reload-Id") == "" {
			t.Errorf("%s: no Reload-Id", step.what)
		}
		c.waitReloads(step.reloads)
	}
	rs, _ := c.s.Running("be_ingress")
	if len(rs) != 3 || rs[0].Address != "127.81.30.2" {
		t.Errorf("running %v", rs)
	}
}

func TestTransactions(t *testing.T) {
	c := start(t)
	st, _ := c.do("POST", "transactions", nil)
	c.want("open without version", st, 400)
	st, _ = c.do("POST", fmt.Sprintf("transactions?version=%d", c.s.Version()+1), nil)
	c.want("open on a stale version", st, 409)

	// Inside a transaction, errors do not spoil it; writes answer 202.
	id := c.open()
	q := "?transaction_id=" + id
	st, _ = c.do("POST", "configuration/backends/be_ingress/servers"+q, Object{"name": "s1", "address": "127.0.0.1"})
	c.want("exists in tx", st, 409)
	st, _ = c.do("POST", "configuration/backends/nope/servers"+q, Object{"name": "s9", "address": "127.0.0.1"})
	c.want("missing parent in tx", st, 400)
	st, _ = c.do("PUT", "configuration/backends/be_ingress/servers/s1"+q, Object{"name": "s1", "address": "127.81.30.9", "port": 8080, "weight": 5})
	c.want("weight in tx", st, 202)
	// A whole-section PUT drops what it leaves out; servers stay.
	st, _ = c.do("PUT", "configuration/backends/be_ingress"+q, Object{"name": "be_ingress", "mode": "tcp"})
	c.want("backend PUT", st, 202)
	v := c.s.Version()
	st, _ = c.do("PUT", "transactions/"+id, nil)
	c.want("commit", st, 202)
	if c.hdr.Get("Reload-Id") == "" || c.s.Version() != v+1 {
		t.Errorf("commit: Reload-Id %q, version %d→%d", c.hdr.Get("Reload-Id"), v, c.s.Version())
	}
	c.waitReloads(1)
	sec, _ := c.s.Backend("be_ingress")
	if _, ok := sec.Object["balance"]; ok || len(sec.Children) != 1 {
		t.Errorf("after a whole PUT: %v, %d servers", sec.Object, len(sec.Children))
	}
	st, _ = c.do("DELETE", "transactions/"+id, nil)
	c.want("delete committed", st, 404)

	// An empty commit bumps the version and reloads.
	id = c.open()
	st, _ = c.do("PUT", "transactions/"+id, nil)
	c.want("empty commit", st, 202)
	c.waitReloads(2)

	// Overtaken: 406, outdated, DELETE 204.
	a, b := c.open(), c.open()
	c.want("commit a", first(c.do("PUT", "transactions/"+a, nil)), 202)
	c.want("commit b overtaken", first(c.do("PUT", "transactions/"+b, nil)), 406)
	_, tx := c.do("GET", "transactions/"+b, nil)
	if tx.(map[string]any)["status"] != "outdated" {
		t.Errorf("overtaken transaction: %v", tx)
	}
	c.want("delete outdated", first(c.do("DELETE", "transactions/"+b, nil)), 204)

	// Overtaken by a write outside any transaction: 409 "version
	// mismatch", and only then outdated (406 from then on).
	id = c.open()
	c.want("write outside", first(c.do("PUT", fmt.Sprintf("configuration/backends/be_ingress/servers/s1?version=%d", c.s.Version()),
		Object{"name": "s1", "address": "127.81.30.8", "port": 8080, "weight": 5})), 200)
	_, tx = c.do("GET", "transactions/"+id, nil)
	if tx.(map[string]any)["status"] != "in_progress" {
		t.Errorf("before its commit: %v, want in_progress", tx)
	}
	st, body := c.do("PUT", "transactions/"+id, nil)
	c.want("commit after a write outside", st, 409)
	if !strings.Contains(fmt.Sprint(body), "version mismatch") {
		t.Errorf("commit after a write outside: %v", body)
	}
	_, tx = c.do("GET", "transactions/"+id, nil)
	if tx.(map[string]any)["status"] != "outdated" {
		t.Errorf("after the 409: %v, want outdated", tx)
	}
	c.want("commit again", first(c.do("PUT", "transactions/"+id, nil)), 406)
	c.want("delete", first(c.do("DELETE", "transactions/"+id, nil)), 204)

	// Validation at commit: 400, failed, version unchanged, DELETE 204.
	id = c.open()
	c.do("POST", "configuration/frontends?transaction_id="+id, Object{"name": "fe", "mode": "tcp", "default_backend": "be_none"})
	v = c.s.Version()
	st, body = c.do("PUT", "transactions/"+id, nil)
	c.want("invalid commit", st, 400)
	if !strings.Contains(fmt.Sprint(body), "validation error") || c.s.Version() != v {
		t.Errorf("invalid commit: %v, version %d→%d", body, v, c.s.Version())
	}
	c.want("commit a failed one", first(c.do("PUT", "transactions/"+id, nil)), 406)
	c.want("delete failed", first(c.do("DELETE", "transactions/"+id, nil)), 204)

	// 20 open at most; failed ones do not count.
	for i := 0; i < 20; i++ {
		c.open()
	}
	c.want("21st", first(c.do("POST", fmt.Sprintf("transactions?version=%d", c.s.Version()), nil)), 429)
}

func first(st int, _ any) int { return st }

func TestReloadsShareAndFail(t *testing.T) {
	s := Start(t, Options{ReloadDelay: 200 * time.Millisecond})
	s.Load([]Section{{Object: Object{"name": "be", "mode": "tcp"}}}, nil)
	c := &tc{t: t, s: s}
	a, b := c.open(), ""
	c.do("PUT", "transactions/"+a, nil)
	id1 := c.hdr.Get("Reload-Id")
	b = c.open()
	c.do("PUT", "transactions/"+b, nil)
	if id2 := c.hdr.Get("Reload-Id"); id1 == "" || id2 != id1 {
		t.Errorf("two commits within the delay: reload ids %q and %q, want one", id1, id2)
	}
	c.waitReloads(1)

	// A bind on a busy port passes the check but fails the reload; the
	// API keeps the change and every later reload fails, until it goes.
	busy, err := net.Listen("tcp", "127.81.30.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := busy.Addr().(*net.TCPAddr).Port
	id := c.open()
	c.do("POST", "configuration/frontends?transaction_id="+id, Object{"name": "fe", "mode": "tcp", "default_backend": "be"})
	c.do("POST", "configuration/frontends/fe/binds?transaction_id="+id, Object{"name": "b", "address": "127.81.30.1", "port": port})
	c.want("commit", first(c.do("PUT", "transactions/"+id, nil)), 202)
	rid := c.hdr.Get("Reload-Id")
	c.waitReloads(2)
	_, rl := c.do("GET", "reloads/"+rid, nil)
	if m := rl.(map[string]any); m["status"] != "failed" || !strings.Contains(m["response"].(string), "bind") {
		t.Errorf("reload %v, want failed with the bind message", rl)
	}
	id = c.open()
	c.do("PUT", "transactions/"+id, nil)
	rid2 := c.hdr.Get("Reload-Id")
	c.waitReloads(3)
	if st := reloadStatus(c, rid2); st != "failed" {
		t.Errorf("the next reload: %s, want failed again", st)
	}
	id = c.open()
	c.do("DELETE", "configuration/frontends/fe?transaction_id="+id, nil)
	c.do("PUT", "transactions/"+id, nil)
	rid3 := c.hdr.Get("Reload-Id")
	c.waitReloads(4)
	if st := reloadStatus(c, rid3); st != "succeeded" {
		t.Errorf("after removing the bad frontend: %s", st)
	}
	// The list holds the failed reloads and the last successful one, not
	// every reload: 4 reloads, 3 entries. An older successful one is
	// still answered by its id.
	_, rls := c.do("GET", "reloads", nil)
	var got []string
	for _, r := range rls.([]any) {
		m := r.(map[string]any)
		got = append(got, fmt.Sprint(m["id"], "=", m["status"]))
	}
	if want := []string{rid + "=failed", rid2 + "=failed", rid3 + "=succeeded"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reloads listed %v, want %v", got, want)
	}
	if st := reloadStatus(c, id1); st != "succeeded" {
		t.Errorf("an older successful reload: %s", st)
	}
}

func reloadStatus(c *tc, id string) string {
	c.t.Helper()
	st, rl := c.do("GET", "reloads/"+id, nil)
	if st != 200 {
		return fmt.Sprint("status ", st)
	}
	return fmt.Sprint(rl.(map[string]any)["status"])
}

func TestRuntimeServers(t *testing.T) {
	c := start(t)
	st, body := c.do("GET", "runtime/backends/be_ingress/servers", nil)
	if st != 200 || body.([]any)[0].(map[string]any)["id"] != "1" {
		t.Errorf("runtime servers: %d %v (id is a string)", st, body)
	}
	c.want("drain", first(c.do("PUT", "runtime/backends/be_ingress/servers/s1", Object{"admin_state": "drain"})), 200)
	c.want("bad state", first(c.do("PUT", "runtime/backends/be_ingress/servers/s1", Object{"admin_state": "sleepy"})), 422)
	c.want("unknown server", first(c.do("PUT", "runtime/backends/be_ingress/servers/s9", Object{"admin_state": "ready"})), 404)
	v := c.s.Version()
	if rs, _ := c.s.Running("be_ingress"); rs[0].Admin != "drain" || c.s.Reloads() != 0 || c.s.Version() != v {
		t.Errorf("runtime change: %v, reloads %d", rs, c.s.Reloads())
	}
	c.want("add", first(c.do("POST", "runtime/backends/be_ingress/servers", Object{"name": "dyn", "address": "127.81.30.7", "port": 80})), 201)
	c.want("add again", first(c.do("POST", "runtime/backends/be_ingress/servers", Object{"name": "dyn", "address": "127.81.30.7", "port": 80})), 409)
	if rs, _ := c.s.Running("be_ingress"); len(rs) != 2 || rs[1].Admin != "maint" {
		t.Errorf("a server added at runtime: %v, want it in maintenance", rs)
	}
	if sec, _ := c.s.Backend("be_ingress"); len(sec.Children) != 1 {
		t.Errorf("a runtime change reached the configuration: %v", sec.Children)
	}
	// The next reload undoes all of it, in a new worker.
	_, info := c.do("GET", "runtime/info", nil)
	pid := info.(map[string]any)["info"].(map[string]any)["pid"]
	c.do("PUT", "transactions/"+c.open(), nil)
	c.waitReloads(1)
	if _, info = c.do("GET", "runtime/info", nil); info.(map[string]any)["info"].(map[string]any)["pid"] == pid {
		t.Errorf("the worker's pid %v did not change at the reload", pid)
	}
	if rs, _ := c.s.Running("be_ingress"); len(rs) != 1 || rs[0].Admin != "ready" {
		t.Errorf("after a reload: %v", rs)
	}
	c.want("delete in service", first(c.do("DELETE", "runtime/backends/be_ingress/servers/s1", nil)), 204)
	if rs, _ := c.s.Running("be_ingress"); len(rs) != 0 {
		t.Errorf("after a runtime delete: %v", rs)
	}
}

// A runtime PUT sets what it is given, the admin state before the
// address; an address HAProxy refuses is left as it was (200).
func TestRuntimeServerAddress(t *testing.T) {
	c := start(t)
	path := "runtime/backends/be_ingress/servers/s1"
	for _, step := range []struct {
		body   Object
		status int
		want   ServerState
	}{
		{Object{"admin_state": "maint", "address": "127.81.30.5", "port": 8081}, 200, ServerState{"s1", "127.81.30.5", 8081, "maint"}},
		{Object{"admin_state": "ready"}, 200, ServerState{"s1", "127.81.30.5", 8081, "ready"}},
		{Object{"address": "not-an-address"}, 200, ServerState{"s1", "127.81.30.5", 8081, "ready"}},
		{Object{"port": 70000}, 422, ServerState{"s1", "127.81.30.5", 8081, "ready"}},
	} {
		c.want(fmt.Sprint(step.body), first(c.do("PUT", path, step.body)), step.status)
		if rs, _ := c.s.Running("be_ingress"); len(rs) != 1 || rs[0] != step.want {
			t.Errorf("after %v: %v, want %v", step.body, rs, step.want)
		}
	}
	if c.s.Reloads() != 0 {
		t.Errorf("a runtime change reloaded")
	}
}

// With full_section=true a section is created or replaced with its
// children, in one write.
func TestFullSection(t *testing.T) {
	c := start(t)
	id := c.open()
	q := "?full_section=true&transaction_id=" + id
	st, _ := c.do("POST", "configuration/backends"+q, Object{"name": "be_x", "mode": "tcp",
		"servers": Object{"s1": Object{"name": "s1", "address": "127.81.30.1", "port": 80}, "s2": Object{"name": "s2", "address": "127.81.30.2", "port": 80}}})
	c.want("create", st, 202)
	st, _ = c.do("PUT", "configuration/backends/be_x"+q, Object{"name": "be_x", "mode": "tcp",
		"servers": Object{"s1": Object{"name": "s1", "address": "127.81.30.1", "port": 80}, "s3": Object{"name": "s3", "address": "127.81.30.3", "port": 80}}})
	c.want("replace", st, 202)
	st, _ = c.do("POST", "configuration/backends"+q, Object{"name": "be_y", "servers": Object{"s1": Object{"name": "s1", "address": "127.81.30.1", "check": "yes"}}})
	c.want("a child the schema refuses", st, 422)
	c.want("commit", first(c.do("PUT", "transactions/"+id, nil)), 202)
	sec, _ := c.s.Backend("be_x")
	var names []string
	for _, o := range sec.Children {
		names = append(names, o["name"].(string))
	}
	if _, has := sec.Object["servers"]; has || fmt.Sprint(names) != "[s1 s3]" {
		t.Errorf("after a full-section replace: %v, servers %v", sec.Object, names)
	}
}

// A Cost makes versioned writes take at least their cost, which grows
// with the number of backends.
func TestCost(t *testing.T) {
	s := Start(t, Options{Cost: Cost{Write: 5 * time.Millisecond, WritePerBackend: time.Millisecond}})
	var secs []Section
	for i := range 20 {
		secs = append(secs, Section{Object: Object{"name": fmt.Sprintf("be%d", i), "mode": "tcp"}, Children: []Object{{"name": "s1", "address": "127.81.30.1", "port": 80}}})
	}
	s.Load(secs, nil)
	c := &tc{t: t, s: s}
	start := time.Now()
	c.want("write", first(c.do("PUT", fmt.Sprintf("configuration/backends/be0/servers/s1?version=%d", s.Version()), Object{"name": "s1", "address": "127.81.30.2", "port": 80})), 200)
	if took, want := time.Since(start), 25*time.Millisecond; took < want {
		t.Errorf("a write at 20 backends took %v, want at least %v", took, want)
	}
}
