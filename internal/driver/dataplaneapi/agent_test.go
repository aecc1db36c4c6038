package dataplaneapi

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// With no node check, the agent of the _nodes servers runs every second
// while a Service is checked faster than that, and every hour otherwise
// (model.Config.NodesAgentInter: HAProxy spreads the checks' first runs
// after a reload over the smallest interval of a second or more, which
// would otherwise be the agent's hour). The agent changes with the reload
// that adds or removes such a Service, in the same write, and a pass with
// nothing changed writes nothing.
func TestContractNodesAgent(t *testing.T) {
	for _, path := range []struct {
		name string
		raw  int
	}{{"transactions", -1}, {"raw", 1}} {
		t.Run(path.name, func(t *testing.T) {
			run(t, func(t *testing.T, a *api) { nodesAgent(t, a, path.raw) })
		})
	}
}

func nodesAgent(t *testing.T, a *api, rawMin int) {
	ctx := context.Background()
	t.Cleanup(func() { a.deleteSection(t, dataplane.BackendPath(model.NodesBackend)) }) // last: after its followers
	w := newTrackWorld(t, a, uint16(freeTCPPort(t)), "127.81.32.1", "127.81.32.2")
	fast := classCfg(t, a, "hks-agent-fast", "127.81.32.10", uint16(freeTCPPort(t)), "be_hks-agent-fast_web_80", "127.81.32.1:30090")
	fast.Backends[0].Check = model.Check{Enabled: true, Inter: 200 * time.Millisecond, Rise: 2, Fall: 2}
	cfg := func(withFast bool) model.Config {
		c := w.cfg()
		if withFast { // sorted by name: after _nodes, before the others
			c.Backends = slices.Insert(c.Backends, 1, fast.Backends[0])
			c.Frontends = slices.Insert(c.Frontends, 0, fast.Frontends[0])
		}
		return c
	}
	agent := func(step string, want time.Duration) {
		t.Helper()
		var nb Object
		if _, err := a.c.Do(ctx, http.MethodGet, dataplane.BackendPath(model.NodesBackend), url.Values{"full_section": {"true"}}, nil, &nb); err != nil {
			t.Fatalf("%s: read _nodes: %v", step, err)
		}
		if ds := nb["default_server"]; !same(ds, agentNever(want)) {
			t.Errorf("%s: _nodes default_server %v, want %v", step, ds, agentNever(want))
		}
	}
	d := a.driver(Options{RawMinWrites: rawMin})
	apply(t, d, cfg(false))
	agent("no fast check", time.Hour)

	step := func(what string, c model.Config, wantReload bool) {
		t.Helper()
		v := a.version(t)
		res, err := d.Apply(ctx, c)
		if err != nil || res.Reloaded != wantReload {
			t.Fatalf("%s: reloaded %v (%v), %v; want reloaded %v", what, res.Reloaded, res.Reasons, err, wantReload)
		}
		writes := a.version(t) - v
		if wantReload && writes != 1 || !wantReload && writes != 0 {
			t.Errorf("%s: %d configuration versions, want %d", what, writes, map[bool]int{true: 1}[wantReload])
		}
	}
	step("a Service checked every 200ms", cfg(true), true)
	agent("a Service checked every 200ms", time.Second)
	step("nothing changed", cfg(true), false)
	d.Invalidate()
	step("nothing changed, read back", cfg(true), false)
	step("the Service gone", cfg(false), true)
	agent("the Service gone", time.Hour)
	step("nothing changed again", cfg(false), false)
	apply(t, d, model.Config{})
}
