package dpdriver

import (
	"context"
	"errors"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane/dataplanetest"
)

// The seed's operator backend: default-server with its own settings, a
// server-template, an older controller's server named after its node.
func TestContractSeedBackendLeftIntact(t *testing.T) {
	srv := dataplanetest.Start(t, dataplanetest.Options{Users: map[string]string{user: pass}})
	srv.Load([]dataplanetest.Section{{
		Object: Object{"name": "be_ingress_https", "mode": "tcp", "from": "unnamed_defaults_1",
			"balance": map[string]any{"algorithm": "leastconn"}, "server_timeout": int64(90000),
			"default_server": map[string]any{"send-proxy-v2": "enabled", "check": "enabled", "inter": int64(5000), "rise": int64(2), "fall": int64(2), "maxconn": int64(500)}},
		Children:  []Object{{"name": "node-a", "address": "127.81.8.1", "port": int64(30443), "check": "enabled"}},
		Templates: []Object{{"prefix": "ingress", "num_or_range": "5", "fqdn": "127.0.0.1", "port": int64(65535), "check": "enabled", "maintenance": "enabled"}},
	}}, nil)
	a := &api{name: "testserver", url: srv.URL, srv: srv, user: user, pass: pass}
	a.c = a.client(t, nil)
	d := a.driver(Options{Seed: "be_ingress_https"})
	cfg := seedCfg("127.81.8.1:30443", "127.81.8.2:30443")
	cfg.Backends[0].Name = "be_ingress_https"
	cfg.Backends[0].SendProxyV2 = true
	apply(t, d, cfg)

	sec, _ := srv.Backend("be_ingress_https")
	want := Object{"name": "be_ingress_https", "mode": "tcp", "from": "unnamed_defaults_1",
		"balance": map[string]any{"algorithm": "roundrobin"}, "adv_check": "tcp-check", "server_timeout": 90000,
		"default_server": map[string]any{"send-proxy-v2": "enabled", "check-send-proxy": "enabled", "check": "enabled",
			"inter": 2000, "rise": 2, "fall": 3, "maxconn": 500}}
	if !same(sec.Object, want) {
		t.Errorf("backend\n got %v\nwant %v", sec.Object, want)
	}
	if len(sec.Templates) != 1 || sec.Templates[0]["prefix"] != "ingress" {
		t.Errorf("server-template changed: %v", sec.Templates)
	}
	for _, s := range sec.Children {
		if s["name"] == "node-a" {
			t.Errorf("the older controller's server was kept: %v", s)
		}
	}
	if got := a.serving(t, "be_ingress_https"); !same(got, set("127.81.8.1:30443", "127.81.8.2:30443")) {
		t.Errorf("serving %v", got)
	}
	// A multi-port Service (be_ingress_https_80, _443) serves from its
	// lowest port's backend.
	cfg.Backends[0].Name = "be_ingress_https_443"
	other := cfg.Backends[0]
	other.Name, other.Servers = "be_ingress_https_80", other.Servers[:1]
	cfg.Backends = append(cfg.Backends, other)
	apply(t, d, cfg)
	if got := a.serving(t, "be_ingress_https"); !same(got, set("127.81.8.1:30443")) {
		t.Errorf("multi-port: serving %v, want the port-80 backend's servers", got)
	}
}

func TestContractSeedBackendMissing(t *testing.T) {
	srv := dataplanetest.Start(t, dataplanetest.Options{})
	a := &api{name: "testserver", url: srv.URL, srv: srv}
	a.c = a.client(t, nil)
	var missing []string
	d := a.driver(Options{Seed: "be_absent", OnBackendMissing: func(b string) { missing = append(missing, b) }})
	cfg := seedCfg("127.81.9.1:30080")
	cfg.Backends[0].Name = "be_absent"
	for range 2 {
		if _, err := d.Apply(context.Background(), cfg); !errors.Is(err, ErrBackendMissing) {
			t.Fatalf("Apply: %v, want ErrBackendMissing", err)
		}
	}
	if len(missing) != 1 {
		t.Errorf("missing backend reported %d times, want once", len(missing))
	}
	if _, ok := srv.Backend("be_absent"); ok || srv.Writes() != 0 {
		t.Errorf("the backend was created (or something written) without the flag")
	}
	apply(t, a.driver(Options{Seed: "be_absent", CreateBackend: true}), cfg)
	if got := a.serving(t, "be_absent"); !same(got, set("127.81.9.1:30080")) {
		t.Errorf("created backend serving %v", got)
	}
}
