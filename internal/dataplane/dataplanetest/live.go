package dataplanetest

import (
	"fmt"
	"strings"
)

// What the API v3.4.0 applies at runtime when a section or server is
// written outside a transaction (measured against the real API with
// HAProxy 2.6.12): it compares the body with what haproxy.cfg held,
// field by field (not the rule lists, not the binds, not maps), and when
// nothing differs, or only fields it can set at runtime, it answers 200
// without a reload. A backend has no such path: it always reloads.

// liveFields are the server fields the API sets at runtime.
var liveFields = map[string]bool{"address": true, "port": true, "weight": true, "maintenance": true,
	"agent-check": true, "agent-addr": true, "agent-send": true, "health_check_port": true}

// liveNumbers are live fields that, removed, fail the API's runtime path
// (it reloads instead): it reads the new value of each changed one.
var liveNumbers = map[string]bool{"port": true, "weight": true, "health_check_port": true}

// serverLive reports whether a server PUT from old to body is applied at
// runtime: nothing differs, or only live fields, none of the numbers
// removed, and an address changed only together with a port (measured: a
// new address for a server without a port reloads). What HAProxy runs may
// still refuse the commands (runtimeTakes).
func serverLive(old, body Object) bool {
	for k := range merged(old, body) {
		if sameField(old[k], body[k]) {
			continue
		}
		if !liveFields[k] || (liveNumbers[k] && body[k] == nil) || (k == "address" && body["port"] == nil) {
			return false
		}
	}
	return true
}

// frontendLive reports whether a frontend PUT from old to body is applied
// without a reload: its own fields are unchanged but for maxconn (removed,
// it reloads). Its rule lists and binds are not compared, so with
// full_section=true a change of only those is written to haproxy.cfg and
// answered 200, and HAProxy runs it only at its next reload (measured).
func frontendLive(old, body Object) bool {
	for k := range merged(old, body) {
		if strings.HasSuffix(k, "_list") || k == "binds" || sameField(old[k], body[k]) {
			continue
		}
		if k != "maxconn" || body[k] == nil {
			return false
		}
	}
	return true
}

func sameField(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func merged(a, b Object) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// runtimeTakes reports whether HAProxy takes the commands the API sends
// for a live server change (else the API reloads; measured): "enable
// agent" only for a server whose agent HAProxy runs (one configured at the
// last reload), agent-send only with the agent enabled; "disable agent"
// and agent-addr always. The API sends agent-check before agent-send.
func (s *Server) runtimeTakes(l *liveChange) bool {
	rs := s.runtime[l.backend][l.server["name"].(string)]
	if rs == nil {
		return true
	}
	if ac := l.server["agent-check"]; !sameField(ac, l.old["agent-check"]) && ac == "enabled" && rs.agent == "" {
		return false
	}
	if !sameField(l.server["agent-send"], l.old["agent-send"]) && rtAgent(rs.agent, l.old, l.server) != "enabled" {
		return false
	}
	return true
}

// rtAgent is the agent's state after the API applied old→body to a
// server whose agent was agent.
func rtAgent(agent string, old, body Object) string {
	if ac, _ := body["agent-check"].(string); agent != "" && ac != "" && !sameField(ac, old["agent-check"]) {
		return ac
	}
	return agent
}
