package dataplaneapi

import (
	"context"
	"errors"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// ownedSeedFields are the backend fields the driver sets in seed mode.
var ownedSeedFields = map[string]bool{"balance": true, "hash_type": true, "adv_check": true, "default_server": true}

// The seed's operator backend: default-server with its own settings, a
// server-template, and an older controller's server named after its node.
func TestContractSeedBackendLeftIntact(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		ctx := context.Background()
		seedBackend := a.seedBackend(t, "be_hks_intact")
		base, _, err := a.c.Get(ctx, dataplane.BackendPath(seedBackend), "")
		if err != nil {
			t.Fatal(err)
		}
		base["balance"] = map[string]any{"algorithm": "leastconn"}
		base["server_timeout"] = int64(90000)
		base["default_server"] = map[string]any{"send-proxy-v2": "enabled", "check": "enabled", "inter": int64(5000),
			"rise": int64(2), "fall": int64(2), "maxconn": int64(500)}
		for _, w := range []struct {
			path string
			put  bool
			obj  Object
		}{
			{dataplane.BackendPath(seedBackend), true, base},
			{dataplane.ServersPath(seedBackend), false, Object{"name": "node-a", "address": "127.81.8.1", "port": int64(30443), "check": "enabled"}},
			{dataplane.ServerTemplatesPath(seedBackend), false, Object{"prefix": "ingress", "num_or_range": "5", "fqdn": "127.0.0.1", "port": int64(65535), "maintenance": "enabled"}},
		} {
			wr := dataplane.Write{Version: a.version(t)}
			if w.put {
				_, err = a.c.Replace(ctx, w.path, w.obj, wr)
			} else {
				_, err = a.c.Create(ctx, w.path, w.obj, wr)
			}
			if err != nil && !errors.Is(err, dataplane.ErrExists) {
				t.Fatalf("set-up %s: %v", w.path, err)
			}
		}
		before, _, err := a.c.Get(ctx, dataplane.BackendPath(seedBackend), "")
		if err != nil {
			t.Fatal(err)
		}
		templates, _, err := a.c.List(ctx, dataplane.ServerTemplatesPath(seedBackend), "")
		if err != nil {
			t.Fatal(err)
		}

		d := a.driver(Options{Seed: seedBackend})
		cfg := seedCfg(seedBackend, "127.81.8.1:30443", "127.81.8.2:30443")
		cfg.Backends[0].SendProxyV2 = true
		apply(t, d, cfg)

		after, _, err := a.c.Get(ctx, dataplane.BackendPath(seedBackend), "")
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range before {
			if !ownedSeedFields[k] && !same(after[k], v) {
				t.Errorf("field %s changed: %v → %v", k, v, after[k])
			}
		}
		want := map[string]any{"send-proxy-v2": "enabled", "check-send-proxy": "enabled", "check": "enabled",
			"inter": 2000, "rise": 2, "fall": 3, "maxconn": 500}
		if !same(after["default_server"], want) || !same(after["balance"], map[string]any{"algorithm": "roundrobin"}) || after["adv_check"] != "tcp-check" {
			t.Errorf("owned fields: default_server %v balance %v adv_check %v", after["default_server"], after["balance"], after["adv_check"])
		}
		if got, _, err := a.c.List(ctx, dataplane.ServerTemplatesPath(seedBackend), ""); err != nil || !same(anySlice(got), anySlice(templates)) {
			t.Errorf("server templates changed: %v → %v (%v)", templates, got, err)
		}
		servers, _, _ := a.c.List(ctx, dataplane.ServersPath(seedBackend), "")
		for _, s := range servers {
			if s["name"] == "node-a" {
				t.Errorf("the older controller's server was kept: %v", s)
			}
		}
		if got := a.serving(t, seedBackend); !same(got, set("127.81.8.1:30443", "127.81.8.2:30443")) {
			t.Errorf("serving %v", got)
		}
		// A multi-port Service (NAME_80, NAME_443) serves from its lowest
		// port's backend.
		// New backends: the applied ones are never changed in place.
		port443, other := *cfg.Backends[0], *cfg.Backends[0]
		port443.Name = seedBackend + "_443"
		other.Name, other.Servers = seedBackend+"_80", other.Servers[:1]
		cfg.Backends = []*model.Backend{&port443, &other}
		apply(t, d, cfg)
		if got := a.serving(t, seedBackend); !same(got, set("127.81.8.1:30443")) {
			t.Errorf("multi-port: serving %v, want the port-80 backend's servers", got)
		}
	})
}

func anySlice(objs []Object) []any {
	out := make([]any, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}

func TestContractSeedBackendMissing(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		const absent = "be_hks_absent"
		var missing []string
		d := a.driver(Options{Seed: absent, OnBackendMissing: func(b string) { missing = append(missing, b) }})
		a.deleteSection(t, dataplane.BackendPath(absent)) // an earlier run's
		t.Cleanup(func() { a.deleteSection(t, dataplane.BackendPath(absent)) })
		cfg := seedCfg(absent, "127.81.9.1:30080")
		v := a.version(t)
		for range 2 {
			if _, err := d.Apply(context.Background(), cfg); !errors.Is(err, ErrBackendMissing) {
				t.Fatalf("Apply: %v, want ErrBackendMissing", err)
			}
		}
		if len(missing) != 1 {
			t.Errorf("missing backend reported %d times, want once", len(missing))
		}
		if a.version(t) != v {
			t.Errorf("something was written without the flag")
		}
		apply(t, a.driver(Options{Seed: absent, CreateBackend: true}), cfg)
		if got := a.serving(t, absent); !same(got, set("127.81.9.1:30080")) {
			t.Errorf("created backend serving %v", got)
		}
	})
}
