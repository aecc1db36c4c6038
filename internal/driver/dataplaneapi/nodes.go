package dataplaneapi

import (
	"maps"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// Servers follow their node (docs/architecture.md, "Nodes as servers"):
// in every-Service mode with --track-nodes, the model has a backend
// model.NodesBackend with one slot per node, and the used slots of the
// backends with TrackNodes are bound to their node's slot when they are
// written (track _nodes/sK). A node excluded, NotReady or back is then one
// runtime request on its slot, which HAProxy passes on to every server
// following it; only the servers in slots that follow no node (placed
// since their backend was last written: plan.Loose) carry their node's
// state themselves. Measured against the real API v3.4.0: it reads track
// and the agent settings back as written, and its runtime endpoint reports
// a follower of a node in maintenance as "maint" whatever its own state
// (no admin bits), so the driver keeps what it set itself (d.rt): it never
// sets a follower's state for its node's sake.

// agentNever is the agent check of the model.NodesBackend's servers when
// nodes are not checked (--node-check=none): HAProxy tracks only a server
// with a check or an agent, and an agent that never answers (port 1 on
// loopback, privileged, nothing listens) never takes a server down. Its
// interval is the model's (model.Config.NodesAgentInter).
func agentNever(inter time.Duration) map[string]any {
	return map[string]any{"agent-check": "enabled", "agent-addr": "127.0.0.1", "agent-port": int64(1), "agent-inter": ms(inter)}
}

// nodesFields sets the fields of the model.NodesBackend: no traffic goes
// there; its servers carry the node check (--node-check: a TCP connect or
// an HTTP GET that must answer 200, on the node's port) or the agent.
func nodesFields(base Object, b *model.Backend, agentInter time.Duration) {
	for _, k := range []string{"balance", "hash_type", "adv_check", "httpchk_params", "http_check_list", "connect_timeout", "server_timeout"} {
		delete(base, k)
	}
	base["mode"] = "tcp"
	c := b.Check
	if !c.Enabled {
		base["default_server"] = agentNever(agentInter)
		return
	}
	ds := map[string]any{}
	checkFields(ds, c, true)
	base["default_server"] = ds
	httpCheck(base, c)
}

// httpCheck sets on a backend the HTTP request of node check c (a GET that
// must answer 200), and drops the one it had otherwise.
func httpCheck(base Object, c model.Check) {
	if c.Enabled && c.HTTP.Path != "" {
		base["adv_check"] = "httpchk"
		base["httpchk_params"] = map[string]any{"method": "GET", "uri": c.HTTP.Path}
		base["http_check_list"] = []any{map[string]any{"type": "expect", "match": "status", "pattern": "200"}}
		return
	}
	delete(base, "httpchk_params")
	delete(base, "http_check_list")
}

// checkFields gives a server (or default_server) node check c when on and
// c is on, and no check of its own otherwise.
func checkFields(o Object, c model.Check, on bool) {
	on = on && c.Enabled
	setOrDelete(o, "check", "enabled", on)
	setOrDelete(o, "inter", ms(c.Inter), on && c.Inter > 0)
	setOrDelete(o, "rise", int64(c.Rise), on && c.Rise > 0)
	setOrDelete(o, "fall", int64(c.Fall), on && c.Fall > 0)
	setOrDelete(o, "health_check_port", int64(c.Port), on && c.Port > 0)
}

// unclean drops from clean, when the model.NodesBackend is not in it (a
// node's state may have changed), the backends holding a server in a slot
// that follows no node (plan.Loose of the last layout): those slots carry
// their node's state themselves. Every other backend following nodes
// stays clean: HAProxy passes the node's state on.
func unclean(clean map[string]bool, cfg model.Config, layout model.Layout) {
	if clean == nil || clean[model.NodesBackend] || cfg.Nodes() == nil {
		return
	}
	for name := range plan.LooseOf(cfg, layout) {
		delete(clean, name)
	}
}

// bindNodes is the sub-config and previous layout for plan.Assign with
// resize: with the model.NodesBackend (as layout has it already
// assigned) ahead of the backends in sub, so that their used slots are
// bound to their node's slot.
func bindNodes(cfg, sub model.Config, prev, layout model.Layout) (model.Config, model.Layout) {
	for _, b := range sub.Backends {
		if b.Name == model.NodesBackend {
			return sub, prev
		}
	}
	b := cfg.Nodes()
	if b == nil {
		return sub, prev
	}
	p := maps.Clone(prev)
	p[model.NodesBackend] = layout[model.NodesBackend]
	sub.Backends = append([]*model.Backend{b}, sub.Backends...)
	return sub, p
}

// staleTracks names the backends of cfg with a slot bound to a node slot
// it may not follow: a backend that does not follow nodes (any more), or
// no model.NodesBackend, or a binding past the NodesBackend's slots (it
// shed free slots). HAProxy refuses such a configuration (a track of a
// server that does not exist; checks and tracking together): they are
// sized anew, unbound, at the reload their change needs anyway.
func staleTracks(cfg model.Config, layout model.Layout) []string {
	nodes, track := len(layout[model.NodesBackend]), cfg.Nodes() != nil
	var out []string
	for _, b := range cfg.Backends {
		for _, sl := range layout[b.Name] {
			if sl.Track != 0 && (!track || !b.TrackNodes || int(sl.Track) > nodes) {
				out = append(out, b.Name)
				break
			}
		}
	}
	return out
}

// The slots of a following backend that follow no node carry no check
// (issue 35), as the HAProxy driver renders them (internal/render): HAProxy
// reserves a file descriptor for every server configured with a check, a
// free slot in maintenance too, and refuses to start or reload past its
// open-file limit. A server placed in such a slot between reloads (a node
// that joined, a pod scheduled elsewhere) follows its node's Kubernetes
// state (the driver sets its maintenance, plan.LooseOf), not the node
// check, until the next reload binds it to its node's slot. HAProxy cannot
// give a server a check at runtime that its configuration line lacks
// (enable health refuses one without "check"), so there is no runtime
// request to do it with.

// looseChecked reports whether a following backend as read has an
// unbound slot with a check: as releases from b05c188 until issue 35
// wrote them. The driver keeps them so until a reload is due anyway
// (target), as the HAProxy driver keeps render.LooseChecked.
func looseChecked(h *section) bool {
	if h == nil {
		return false
	}
	for _, c := range h.children {
		if _, bound := c["track"]; !bound && c["check"] == "enabled" {
			return true
		}
	}
	return false
}
