package dataplaneapi

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane/dataplanetest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// bigCfg is n Services of 5 servers each on 20 nodes; node excluded is
// left out.
func bigCfg(n int, excluded int) model.Config {
	var cfg model.Config
	for i := range n {
		name := fmt.Sprintf("default_svc%05d_80", i)
		be := model.Backend{Name: "be_" + name, Balance: "roundrobin", Check: model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 3}}
		for j := range 5 {
			node := (i + j) % 20
			if node == excluded {
				continue
			}
			be.Servers = append(be.Servers, model.Server{Addr: netip.AddrFrom4([4]byte{127, 81, 40, byte(node + 1)}), Port: uint16(30000 + i)})
		}
		cfg.Backends = append(cfg.Backends, &be)
	}
	return cfg
}

// BenchmarkNodePass: a node excluded and back at 1,000 Services (250
// servers each way), against the test server.
func BenchmarkNodePass(b *testing.B) {
	srv := dataplanetest.Start(b, dataplanetest.Options{})
	a := &api{url: srv.URL, srv: srv}
	c, err := dataplaneClient(a.url)
	if err != nil {
		b.Fatal(err)
	}
	d := New(Options{Client: c, ReloadPoll: time.Millisecond})
	all, without := bigCfg(1000, -1), bigCfg(1000, 3)
	for i, b := range without.Backends { // unchanged backends are shared
		if len(b.Servers) == len(all.Backends[i].Servers) {
			without.Backends[i] = all.Backends[i]
		}
	}
	if _, err := d.Apply(context.Background(), all); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		cfg := without
		if i%2 == 1 {
			cfg = all
		}
		res, err := d.Apply(context.Background(), cfg)
		if err != nil || res.Reloaded {
			b.Fatalf("%v %v", err, res.Reasons)
		}
	}
}

// BenchmarkEndpointPass: one server of one backend goes and comes back at
// 1,000 Services: the pass costs of everything else.
func BenchmarkEndpointPass(b *testing.B) {
	srv := dataplanetest.Start(b, dataplanetest.Options{})
	c, err := dataplaneClient(srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	d := New(Options{Client: c, ReloadPoll: time.Millisecond})
	// As the desired package does, unchanged backends keep their slices.
	all := bigCfg(1000, -1)
	without := model.Config{Backends: slices.Clone(all.Backends)}
	without.Backends[500] = all.Backends[500].WithServers(all.Backends[500].Servers[1:])
	if _, err := d.Apply(context.Background(), all); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		cfg := without
		if i%2 == 1 {
			cfg = all
		}
		if res, err := d.Apply(context.Background(), cfg); err != nil || res.Reloaded || res.Ops != 1 {
			b.Fatalf("%v %v ops=%d", err, res.Reasons, res.Ops)
		}
	}
}

// BenchmarkSeedNodeChange: the seed's single-backend mode (the operator's
// backend, three nodes), a node going out and back, each pass until
// HAProxy serves it. Against a real API when HKS_DATAPLANE_URL (and
// _USERNAME, _PASSWORD) is set, else the test server with the real API's
// measured cost.
func BenchmarkSeedNodeChange(b *testing.B) {
	const be = "be_hks_bench_seed"
	api := newBenchAPI(b, 30*time.Second)
	if api.srv != nil {
		api.srv.Load([]dataplanetest.Section{{Object: Object{"name": be, "mode": "tcp", "balance": map[string]any{"algorithm": "roundrobin"}}}}, nil)
	}
	c := api.c
	ctx := context.Background()
	if _, _, err := c.Get(ctx, dataplane.BackendPath(be), ""); errors.Is(err, dataplane.ErrNotFound) {
		v, _ := c.Version(ctx)
		resp, err := c.Create(ctx, dataplane.BackendsPath, Object{"name": be, "mode": "tcp", "balance": map[string]any{"algorithm": "roundrobin"}}, dataplane.Write{Version: v})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.WaitReload(ctx, resp.ReloadID, 20*time.Millisecond); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			v, _ := c.Version(ctx)
			_, _ = c.Delete(ctx, dataplane.BackendPath(be), dataplane.Write{Version: v})
		})
	}
	d := New(Options{Client: c, Seed: be, ReloadPoll: 10 * time.Millisecond})
	defer d.Close()
	all, without := seedCfg(be, "127.81.14.1:30080", "127.81.14.2:30080", "127.81.14.3:30080"), seedCfg(be, "127.81.14.1:30080", "127.81.14.3:30080")
	if _, err := d.Apply(ctx, all); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		cfg := without
		if i%2 == 1 {
			cfg = all
		}
		if res, err := d.Apply(ctx, cfg); err != nil || res.Reloaded {
			b.Fatalf("%v %v", err, res.Reasons)
		}
	}
}
