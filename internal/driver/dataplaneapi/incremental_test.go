package dataplaneapi

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A pass that skips the sections whose model did not change leaves the API
// exactly as a pass that compares everything wants it: after every step of
// random churn, once the configuration is written, a fresh driver finds
// nothing to write, at runtime or in the configuration.
func TestIncrementalPassesMatchFullOnes(t *testing.T) {
	d, _ := fastDriver(t)
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
		fresh := New(d.opts) // a new controller's driver on the same API
		res, err := fresh.Apply(context.Background(), cfg)
		if err != nil || res.Ops != 0 {
			t.Fatalf("step %d: a full pass after the incremental one wrote %d times (%v, err %v)", step, res.Ops, res.Reasons, err)
		}
	}
}

// A backend outgrowing its slots costs one reload and one write: only that
// backend is sized anew, not every backend (each write costs the real API
// a rewrite of haproxy.cfg: resizing 1,000 backends at once would take
// minutes).
func TestResizeWritesOnlyWhatOutgrew(t *testing.T) {
	d, srv := fastDriver(t)
	cfg := bigCfg(50, -1)
	if _, err := d.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	// Every backend down to 2 servers of its 8 slots: a full resize would
	// shed 4 slots of each.
	for i, b := range cfg.Backends {
		cfg.Backends[i] = b.WithServers(b.Servers[:2])
	}
	if res, err := d.Apply(context.Background(), cfg); err != nil || res.Reloaded {
		t.Fatalf("Apply: %v, reloaded %v", err, res.Reloaded)
	}
	if err := d.Flush(context.Background()); err != nil { // else the transaction carries those slots too
		t.Fatal(err)
	}
	next := model.Config{Backends: slices.Clone(cfg.Backends)}
	b := *next.Backends[7]
	for i := range 10 { // 15 servers: more than its 8 slots
		b.Servers = append(slices.Clone(b.Servers), model.Server{Addr: netip.AddrFrom4([4]byte{127, 81, 51, byte(1 + i)}), Port: 31000})
	}
	next.Backends[7] = &b
	v := srv.Version()
	res, err := d.Apply(context.Background(), next)
	if err != nil || !res.Reloaded {
		t.Fatalf("Apply: %v, reloaded %v", err, res.Reloaded)
	}
	if res.Ops != 3 || srv.Version() != v+1 {
		t.Errorf("%d requests (%v), want 3: open, the one backend written whole, commit", res.Ops, res.Reasons)
	}
	if sec, _ := srv.Backend(b.Name); len(sec.Children) < 15 {
		t.Errorf("%s has %d slots for 15 servers", b.Name, len(sec.Children))
	}
}
