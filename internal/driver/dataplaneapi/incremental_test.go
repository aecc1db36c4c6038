package dataplaneapi

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane/dataplanetest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A pass that skips the sections whose model did not change leaves the API
// exactly as a pass that compares everything wants it: after every step of
// random churn, once the configuration is written, a fresh driver finds
// nothing to write, at runtime or in the configuration.
func TestIncrementalPassesMatchFullOnes(t *testing.T) {
	srv := dataplanetest.Start(t, dataplanetest.Options{ReloadDelay: time.Millisecond})
	c, err := dataplaneClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	d := New(Options{Client: c, ReloadPoll: time.Millisecond})
	cfg := bigCfg(30, -1)
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 60 {
		next := model.Config{Backends: slices.Clone(cfg.Backends)}
		i := rng.IntN(len(next.Backends))
		b := new(model.Backend) // a changed copy: cfg's backends are shared with next
		*b = *next.Backends[i]
		next.Backends[i] = b
		switch rng.IntN(4) {
		case 0: // a server goes
			if len(b.Servers) > 0 {
				b.Servers = slices.Delete(slices.Clone(b.Servers), 0, 1)
			}
		case 1: // a server comes
			b.Servers = append(slices.Clone(b.Servers), model.Server{Addr: netip.AddrFrom4([4]byte{127, 81, 50, byte(1 + rng.IntN(200))}), Port: 31000})
			slices.SortFunc(b.Servers, func(x, y model.Server) int { return x.Key().Compare(y.Key()) })
			b.Servers = slices.CompactFunc(b.Servers, func(x, y model.Server) bool { return x.Key() == y.Key() })
		case 2: // a server drains
			if len(b.Servers) > 0 {
				b.Servers = slices.Clone(b.Servers)
				b.Servers[0].Drain = !b.Servers[0].Drain
			}
		case 3: // a setting changes (structure: a transaction)
			b.Check.Rise = 1 + rng.IntN(3)
		}
		cfg = next
		if _, err := d.Apply(context.Background(), cfg); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if err := d.Flush(context.Background()); err != nil {
			t.Fatalf("step %d: flush: %v", step, err)
		}
		fresh := New(Options{Client: c, ReloadPoll: time.Millisecond})
		res, err := fresh.Apply(context.Background(), cfg)
		if err != nil || res.Ops != 0 {
			t.Fatalf("step %d: a full pass after the incremental one wrote %d times (%v, err %v)", step, res.Ops, res.Reasons, err)
		}
	}
}
