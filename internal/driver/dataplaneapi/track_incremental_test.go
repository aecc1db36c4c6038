package dataplaneapi

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Passes of servers following their node (node out and back, a node
// joining and leaving Services, drains, settings) leave HAProxy running
// exactly the servers whose node is in service, and the configuration such
// that a new controller converges at once: no reload, no configuration
// write, and nothing to do at its second pass.
func TestIncrementalTrackedPasses(t *testing.T) {
	d, srv := fastDriver(t)
	ctx := context.Background()
	cfg := trackedCfg(30, -1, false, nil)
	down := map[netip.Addr]bool{}
	extra := false
	rng := rand.New(rand.NewPCG(3, 4))
	for step := range 80 {
		next := model.Config{Backends: slices.Clone(cfg.Backends)}
		k := rng.IntN(5)
		switch k {
		case 0, 1: // a node out or back
			nb := *next.Backends[0]
			nb.Servers = slices.Clone(nb.Servers)
			n := rng.IntN(len(nb.Servers))
			if extra && rng.IntN(2) == 0 { // the new node: its servers may follow no node yet
				n = slices.IndexFunc(nb.Servers, func(s model.Server) bool { return s.Addr.As4()[3] == 21 })
			}
			nb.Servers[n].Maint = !nb.Servers[n].Maint
			down[nb.Servers[n].Addr] = nb.Servers[n].Maint
			next.Backends[0] = &nb
		case 2: // the 21st node joins or leaves every fourth Service
			extra = !extra
			joined := trackedCfg(30, -1, extra, nil)
			nb := *next.Backends[0]
			nb.Servers = joined.Backends[0].Servers
			for i := range nb.Servers {
				nb.Servers[i].Maint = down[nb.Servers[i].Addr]
			}
			next.Backends[0] = &nb
			for i := 1; i < len(next.Backends); i++ {
				if (i-1)%4 == 0 {
					b := *next.Backends[i]
					b.Servers = slices.Clone(joined.Backends[i].Servers)
					for j := range b.Servers { // keep the drains
						if k := slices.IndexFunc(next.Backends[i].Servers, func(o model.Server) bool { return o.Key() == b.Servers[j].Key() }); k >= 0 {
							b.Servers[j].Drain = next.Backends[i].Servers[k].Drain
						}
					}
					next.Backends[i] = &b
				}
			}
		case 3: // a server drains or stops draining
			i := 1 + rng.IntN(len(next.Backends)-1)
			b := *next.Backends[i]
			b.Servers = slices.Clone(b.Servers)
			b.Servers[0].Drain = !b.Servers[0].Drain
			next.Backends[i] = &b
		case 4: // a setting changes (a reload)
			i := 1 + rng.IntN(len(next.Backends)-1)
			b := *next.Backends[i]
			b.TimeoutServer = time.Duration(1+rng.IntN(5)) * time.Minute
			next.Backends[i] = &b
		}
		cfg = next
		if _, err := d.Apply(ctx, cfg); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		for _, b := range cfg.Backends[1:] {
			running, _ := srv.Running(b.Name)
			got, want := map[string]bool{}, map[string]bool{}
			for _, r := range running {
				if r.Admin == "ready" { // a drain reads "drain" even under a node out
					got[fmt.Sprintf("%s:%d", r.Address, r.Port)] = true
				}
			}
			for _, s := range b.Servers {
				if !down[s.Addr] && !s.Drain {
					want[s.Key().String()] = true
				}
			}
			if !maps.Equal(got, want) {
				sec, _ := srv.Backend(b.Name)
				nsec, _ := srv.Backend(model.NodesBackend)
				t.Fatalf("step %d: %s runs %v, want %v\nlayout %+v\nconfig %v\nnodes %v\nrunning %v", step, b.Name, got, want, d.layout[b.Name], sec.Children, nsec.Children, running)
			}
		}
		if err := d.Flush(ctx); err != nil {
			t.Fatalf("step %d: flush: %v", step, err)
		}
		v, r := srv.Version(), srv.Reloads()
		fresh := New(d.opts) // a new controller's driver on the same API
		if res, err := fresh.Apply(ctx, cfg); err != nil || res.Reloaded || srv.Version() != v || srv.Reloads() != r {
			t.Fatalf("step %d: a new controller: reloaded %v (%v) err %v, version %d→%d", step, res.Reloaded, res.Reasons, err, v, srv.Version())
		}
		if res, err := fresh.Apply(ctx, cfg); err != nil || res.Ops != 0 {
			t.Fatalf("step %d: a new controller's second pass wrote %d times (err %v)", step, res.Ops, err)
		}
		fresh.Close()
	}
}
