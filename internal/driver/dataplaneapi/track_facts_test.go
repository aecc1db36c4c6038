package dataplaneapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
)

// What the API does with servers that follow another server (HAProxy's
// track), the facts the driver's _nodes backend rests on, measured against
// the real API v3.4.0 with HAProxy 2.6.12 and modelled by the test server.

// fullSection creates a backend with its servers in one write (after
// deleting any of that name an earlier run left) and deletes it when the
// test ends (cleanups run last first: create the tracked backend first).
func (a *api) fullSection(t *testing.T, obj Object, servers ...Object) {
	t.Helper()
	name := obj["name"].(string)
	a.deleteSection(t, dataplane.BackendPath(name))
	body := maps.Clone(obj)
	m := map[string]any{}
	for _, s := range servers {
		m[s["name"].(string)] = s
	}
	body["servers"] = m
	resp, err := a.c.Do(context.Background(), http.MethodPost, dataplane.BackendsPath,
		url.Values{"version": {fmt.Sprint(a.version(t))}, "full_section": {"true"}}, body, nil)
	if err != nil {
		t.Fatalf("creating backend %s: %v", name, err)
	}
	a.waitReload(t, resp.ReloadID)
	t.Cleanup(func() { a.deleteSection(t, dataplane.BackendPath(name)) })
}

// admin is the admin_state the runtime endpoint reports for be/srv.
func (a *api) admin(t *testing.T, be, srv string) string {
	t.Helper()
	rs, err := a.c.RuntimeServers(context.Background(), be)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r["name"] == srv {
			return fmt.Sprint(r["admin_state"])
		}
	}
	t.Fatalf("%s/%s: not running", be, srv)
	return ""
}

func (a *api) setAdmin(t *testing.T, be, srv, state string) {
	t.Helper()
	if err := a.c.SetRuntimeServer(context.Background(), be, srv, Object{"admin_state": state}); err != nil {
		t.Fatalf("%s/%s %s: %v", be, srv, state, err)
	}
}

func TestContractTrackFacts(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		const nodes, tracker = "be_hks_trk_nodes", "be_hks_trk_svc"
		agent := map[string]any{"agent-check": "enabled", "agent-addr": "127.0.0.1", "agent-port": int64(1), "agent-inter": int64(3600000)}
		a.fullSection(t, Object{"name": nodes, "mode": "tcp", "default_server": agent},
			Object{"name": "s1", "address": "127.81.9.1", "port": int64(8080)},
			Object{"name": "s2", "address": "127.81.9.2", "port": int64(8080)})
		trackers := []Object{
			{"name": "s1", "address": "127.81.9.1", "port": int64(30080), "track": nodes + "/s1"},
			{"name": "s2", "address": "127.81.9.2", "port": int64(30080), "track": nodes + "/s2"},
			{"name": "s3", "address": "127.0.0.1", "port": int64(1), "maintenance": "enabled", "track": nodes + "/s1"},
		}
		a.fullSection(t, Object{"name": tracker, "mode": "tcp", "balance": map[string]any{"algorithm": "roundrobin"}}, trackers...)

		// Read back exactly as written: the agent settings, the tracks.
		nb, _, err := a.c.Get(context.Background(), dataplane.BackendPath(nodes), "")
		if err != nil {
			t.Fatal(err)
		}
		if ds, _ := nb["default_server"].(map[string]any); !same(ds, agent) {
			t.Errorf("default_server read back as %v, want %v", ds, agent)
		}
		got, _, err := a.c.List(context.Background(), dataplane.ServersPath(tracker), "")
		if err != nil {
			t.Fatal(err)
		}
		sortByName(got)
		if len(got) != len(trackers) {
			t.Fatalf("servers read back: %v", got)
		}
		for i := range trackers {
			if !same(got[i], trackers[i]) {
				t.Errorf("server read back as %v, want %v", got[i], trackers[i])
			}
		}
		// The text has the keywords.
		text, _, err := a.c.RawConfig(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{"track " + nodes + "/s1", "agent-check", "agent-port 1"} {
			if !strings.Contains(text, w) {
				t.Errorf("haproxy.cfg lacks %q", w)
			}
		}
		// What HAProxy refuses, the API refuses (400, nothing written).
		for _, bad := range []struct{ line, why string }{
			{"server s1 127.81.9.1:1 track " + nodes + "/s9", "unable to find required server 's9' for tracking"},
			{"server s1 127.81.9.1:1 check track " + nodes + "/s1", "unable to enable checks and tracking at the same time"},
			{"server s1 127.81.9.1:1 track " + tracker + "/s9", "unable to find required server 's9'"},
		} {
			text, v, err := a.c.RawConfig(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			text += "\nbackend be_hks_trk_bad\n  mode tcp\n  " + bad.line + "\n"
			_, err = a.c.PostRaw(context.Background(), text, v, true)
			if !errors.Is(err, dataplane.ErrValidation) || !strings.Contains(err.Error(), bad.why) {
				t.Errorf("%s: got %v, want a 400 saying %q", bad.line, err, bad.why)
			}
		}

		// At runtime a node's state is one request, and every server
		// following it inherits it. The runtime endpoint reports no admin
		// bits: a follower of a node in maintenance reads "maint" whatever
		// its own state, and setting it ready (200) changes nothing it
		// reads until the node is ready.
		r0 := a.reloads(t)
		a.setAdmin(t, nodes, "s1", "maint")
		for _, c := range []struct{ srv, want string }{{"s1", "maint"}, {"s2", "ready"}, {"s3", "maint"}} {
			if got := a.admin(t, tracker, c.srv); got != c.want {
				t.Errorf("node s1 in maintenance: %s reads %q, want %q", c.srv, got, c.want)
			}
		}
		a.setAdmin(t, tracker, "s1", "ready")
		if got := a.admin(t, tracker, "s1"); got != "maint" {
			t.Errorf("a follower set ready while its node is in maintenance reads %q, want maint (inherited)", got)
		}
		a.setAdmin(t, nodes, "s1", "ready")
		for _, c := range []struct{ srv, want string }{{"s1", "ready"}, {"s3", "maint"}} {
			if got := a.admin(t, tracker, c.srv); got != c.want {
				t.Errorf("node s1 ready again: %s reads %q, want %q (its own state)", c.srv, got, c.want)
			}
		}
		// A follower's own drain reads "drain" under its node's
		// maintenance; a node's drain reads "maint" on its followers.
		a.setAdmin(t, tracker, "s1", "drain")
		a.setAdmin(t, nodes, "s1", "maint")
		if got := a.admin(t, tracker, "s1"); got != "drain" {
			t.Errorf("own drain under a node in maintenance reads %q, want drain", got)
		}
		a.setAdmin(t, nodes, "s1", "ready")
		a.setAdmin(t, tracker, "s1", "ready")
		a.setAdmin(t, nodes, "s2", "drain")
		if got := a.admin(t, tracker, "s2"); got != "maint" {
			t.Errorf("a follower of a draining node reads %q, want maint", got)
		}
		a.setAdmin(t, nodes, "s2", "ready")
		if got := a.admin(t, tracker, "s2"); got != "ready" {
			t.Errorf("node s2 ready again: s2 reads %q", got)
		}
		// The API sets an admin state only when it reads another one: so
		// "maint" for a follower of a node in maintenance, which reads
		// "maint", leaves its own state ready, and it serves again with
		// its node (owed.go); once its node is ready, it takes.
		a.setAdmin(t, nodes, "s1", "maint")
		a.setAdmin(t, tracker, "s1", "maint")
		a.setAdmin(t, nodes, "s1", "ready")
		if got := a.admin(t, tracker, "s1"); got != "ready" {
			t.Errorf("a follower set to maint under its node's maintenance reads %q once its node is ready, want ready (unchanged)", got)
		}
		a.setAdmin(t, tracker, "s1", "maint")
		if got := a.admin(t, tracker, "s1"); got != "maint" {
			t.Errorf("a follower set to maint under a node in service reads %q", got)
		}
		a.setAdmin(t, tracker, "s1", "ready")
		if r := a.reloads(t); r != r0 {
			t.Errorf("runtime changes reloaded HAProxy %d times", r-r0)
		}
	})
}
