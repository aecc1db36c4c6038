package dataplaneapi

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
)

// TestContractLivePuts pins which versioned PUTs outside a transaction the
// API applies at runtime (200, no Reload-Id, no reload counted by HAProxy's
// master, though haproxy.cfg is written and the version bumps) and which
// reload (202 and a Reload-Id). The driver writes only servers that way
// (the persister, which takes either answer); these facts keep the test
// server honest.
func TestContractLivePuts(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		const be, fe = "be_hks_live", "fe_hks_live"
		a.fullSection(t, Object{"name": be, "mode": "tcp", "balance": map[string]any{"algorithm": "roundrobin"}},
			Object{"name": "s1", "address": "127.81.9.1", "port": int64(8080), "weight": int64(10), "check": "enabled",
				"health_check_port": int64(8081), "inter": int64(2000), "agent-check": "enabled", "agent-port": int64(9999),
				"agent-addr": "127.0.0.3", "agent-send": "hello", "agent-inter": int64(3600000)},
			Object{"name": "s2", "address": "127.81.9.2"})
		a.section(t, "frontend", Object{"name": fe, "mode": "tcp", "default_backend": be, "maxconn": int64(100), "client_timeout": int64(60000)},
			Object{"name": "b1", "address": "127.81.0.1", "port": int64(freeTCPPort(t))})
		s1, s2 := dataplane.ServerPath(be, "s1"), dataplane.ServerPath(be, "s2")
		rule := []any{map[string]any{"type": "connection", "action": "reject", "cond": "unless", "cond_test": "{ src 127.0.0.0/8 }"}}
		set := func(kv ...any) func(Object) {
			return func(o Object) {
				for i := 0; i < len(kv); i += 2 {
					if kv[i+1] == nil {
						delete(o, kv[i].(string))
					} else {
						o[kv[i].(string)] = kv[i+1]
					}
				}
			}
		}
		for _, c := range []struct {
			what, path string
			full       bool
			change     func(Object)
			live       bool
		}{
			{"server unchanged", s1, false, set(), true},
			{"server weight", s1, false, set("weight", int64(20)), true},
			{"server address", s1, false, set("address", "127.81.9.3"), true},
			{"server port", s1, false, set("port", int64(8090)), true},
			{"server maintenance", s1, false, set("maintenance", "enabled"), true},
			{"server agent-check", s1, false, set("agent-check", "disabled"), true},
			{"server agent-check back", s1, false, set("agent-check", "enabled"), true},
			{"server agent-check again", s1, false, set("agent-check", "disabled"), true},
			{"server agent-addr", s1, false, set("agent-addr", "127.0.0.4"), true},
			// HAProxy refuses agent-send for a server whose agent is
			// disabled (agent-addr it takes), and enabling an agent it
			// does not run (none at its last reload): the API reloads.
			{"server agent-send, the agent disabled", s1, false, set("agent-send", "bye"), false},
			{"server agent-check enabled, none running", s1, false, set("agent-check", "enabled"), false},
			{"server agent-send", s1, false, set("agent-send", "hello2"), true},
			{"server health_check_port", s1, false, set("health_check_port", int64(8082)), true},
			{"server weight, agent-addr, health_check_port", s1, false, set("weight", int64(30), "agent-addr", "127.0.0.5", "health_check_port", int64(8083)), true},
			{"server inter", s1, false, set("inter", int64(3000)), false},
			{"server weight and inter", s1, false, set("weight", int64(40), "inter", int64(4000)), false},
			{"server agent-port", s1, false, set("agent-port", int64(9998)), false},
			{"server weight removed", s1, false, set("weight", nil), false},
			{"server without a port unchanged", s2, false, set(), true},
			{"server without an agent: agent-check disabled", s2, false, set("agent-check", "disabled"), true},
			{"server without a port: address", s2, false, set("address", "127.81.9.4"), false},
			{"server port added with an address", s2, false, set("address", "127.81.9.5", "port", int64(80)), true},
			{"frontend unchanged", dataplane.FrontendPath(fe), false, set(), true},
			{"frontend maxconn", dataplane.FrontendPath(fe), false, set("maxconn", int64(200)), true},
			{"frontend maxconn removed", dataplane.FrontendPath(fe), false, set("maxconn", nil), false},
			{"frontend maxconn added", dataplane.FrontendPath(fe), false, set("maxconn", int64(300)), true},
			{"frontend client_timeout", dataplane.FrontendPath(fe), false, set("client_timeout", int64(50000)), false},
			{"frontend maxconn and client_timeout", dataplane.FrontendPath(fe), false, set("maxconn", int64(400), "client_timeout", int64(40000)), false},
			{"frontend whole, unchanged", dataplane.FrontendPath(fe), true, set(), true},
			// Rule lists and binds are not compared: written, not run
			// until the next reload.
			{"frontend whole, a rule added", dataplane.FrontendPath(fe), true, set("tcp_request_rule_list", rule), true},
			{"frontend whole, maxconn", dataplane.FrontendPath(fe), true, set("maxconn", int64(500)), true},
			{"frontend whole, the rule removed", dataplane.FrontendPath(fe), true, set("tcp_request_rule_list", nil), true},
			{"backend unchanged", dataplane.BackendPath(be), false, set(), false},
			{"backend whole, unchanged", dataplane.BackendPath(be), true, set(), false},
		} {
			ctx := context.Background()
			q := map[string][]string{}
			if c.full {
				q["full_section"] = []string{"true"}
			}
			var body Object
			if _, err := a.c.Do(ctx, "GET", c.path, q, nil, &body); err != nil {
				t.Fatalf("%s: %v", c.what, err)
			}
			body = maps.Clone(body)
			c.change(body)
			v, r0 := a.version(t), a.reloads(t)
			resp, err := a.c.Replace(ctx, c.path, body, dataplane.Write{Version: v, Full: c.full})
			if err != nil {
				t.Fatalf("%s: %v", c.what, err)
			}
			got := fmt.Sprintf("%d, Reload-Id %t", resp.Status, resp.ReloadID != "")
			if want := fmt.Sprintf("%d, Reload-Id %t", map[bool]int{true: 200, false: 202}[c.live], !c.live); got != want {
				t.Errorf("%s: %s, want %s", c.what, got, want)
			}
			if nv := a.version(t); nv != v+1 {
				t.Errorf("%s: version %d → %d, want one write", c.what, v, nv)
			}
			if resp.ReloadID != "" {
				a.waitReload(t, resp.ReloadID)
			} else {
				// The API schedules a reload before it answers: none is
				// under way.
				rl, err := a.c.Reloads(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rl {
					if r.Status == dataplane.ReloadInProgress {
						t.Errorf("%s: reload %s in progress", c.what, r.ID)
					}
				}
			}
			want := r0
			if !c.live {
				want++
			}
			if r := a.reloads(t); r != want {
				t.Errorf("%s: %d reloads, want %d", c.what, r-r0, want-r0)
			}
		}
	})
}
