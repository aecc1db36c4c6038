package render

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// dynamicSample is sample() with a second backend of the web backend's
// class, an HTTP backend speaking h2c, and one with ClientIP affinity.
func dynamicSample() model.Config {
	cfg := sample()
	web2 := *cfg.Backends[0]
	web2.Name, web2.Service = "be_default_web2_80", "default/web2"
	h2 := &model.Backend{Name: "gwh_default_grpc_50051", Balance: "roundrobin", HTTP: true, H2C: true,
		Servers: []model.Server{{Addr: ap("10.0.0.7"), Port: 50051}}}
	sticky := *cfg.Backends[0]
	sticky.Name, sticky.Affinity = "be_default_sticky_80", time.Hour
	cfg.Backends = append(cfg.Backends, &web2, h2, &sticky)
	slices.SortFunc(cfg.Backends, func(a, b *model.Backend) int { return strings.Compare(a.Name, b.Name) })
	return cfg
}

func TestDynamicBackends(t *testing.T) {
	cfg := dynamicSample()
	layout, _ := plan.Assign(cfg, nil, true)
	dyn := opts
	dyn.DynamicBackends = true
	got := Config(cfg, layout, dyn)
	golden.Assert(t, "dynamic.cfg", got)
	golden.HAProxyAccepts(t, got)

	from := DynamicBackends(cfg, dyn)
	if len(DynamicBackends(cfg, opts)) != 0 {
		t.Errorf("without the option: %v, want none", DynamicBackends(cfg, opts))
	}
	want := []string{"be_default_web2_80", "be_default_web_80", "be_prod_db_5432", "gwh_default_grpc_50051"}
	if names := slices.Sorted(maps.Keys(from)); !slices.Equal(names, want) {
		t.Errorf("dynamic backends %v, want %v (affinity stays static)", names, want)
	}
	if from["be_default_web_80"] != from["be_default_web2_80"] || from["be_default_web_80"] == from["be_prod_db_5432"] {
		t.Errorf("classes %v: want the two web backends in one, the db backend in another", from)
	}

	h := StructureHash(cfg, layout, dyn)
	web2 := slices.IndexFunc(cfg.Backends, func(b *model.Backend) bool { return b.Name == "be_default_web2_80" })
	for _, tc := range []struct {
		name   string
		change func(*model.Config)
		same   bool
	}{
		{"a backend of a class in use goes", func(c *model.Config) { c.Backends = slices.Delete(c.Backends, web2, web2+1) }, true},
		{"a backend of a class in use comes", func(c *model.Config) {
			b := *c.Backends[web2]
			b.Name = "be_default_web3_80"
			c.Backends = append(c.Backends, &b)
		}, true},
		{"its servers change", func(c *model.Config) {
			c.Backends[web2] = c.Backends[web2].WithServers([]model.Server{{Addr: ap("10.9.9.9"), Port: 1}})
		}, true},
		{"a new class", func(c *model.Config) {
			b := *c.Backends[web2]
			b.Name, b.Balance = "be_default_web3_80", "leastconn"
			c.Backends = append(c.Backends, &b)
		}, false},
		{"a static backend's setting", func(c *model.Config) {
			i := slices.IndexFunc(c.Backends, func(b *model.Backend) bool { return b.Affinity > 0 })
			b := *c.Backends[i]
			b.TimeoutServer = time.Second
			c.Backends[i] = &b
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dynamicSample()
			tc.change(&c)
			l, _ := plan.Assign(c, nil, true)
			if same := StructureHash(c, l, dyn) == h; same != tc.same {
				t.Errorf("same hash = %v, want %v", same, tc.same)
			}
		})
	}
	if StructureHash(cfg, layout, opts) == h {
		t.Errorf("static and dynamic renderings share a hash")
	}
}

func TestServerOptions(t *testing.T) {
	for _, tc := range []struct {
		be   model.Backend
		want string
	}{
		{model.Backend{Balance: "roundrobin"}, ""},
		{model.Backend{Check: model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 3}, SendProxyV2: true},
			"check inter 2s rise 2 fall 3 send-proxy-v2 check-send-proxy"},
		{model.Backend{HTTP: true, H2C: true}, "proto h2"},
	} {
		if got := strings.Join(ServerOptions(&tc.be), " "); got != tc.want {
			t.Errorf("ServerOptions(%+v) = %q, want %q", tc.be, got, tc.want)
		}
	}
}
