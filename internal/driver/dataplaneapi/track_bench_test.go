package dataplaneapi

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// trackedCfg is n Services of 5 servers each on 20 nodes following their
// node, and _nodes: node down in maintenance; with extra, a 21st node with
// a server in every fourth Service. Unchanged backends share their
// servers with base (as the desired package hands them out).
func trackedCfg(n int, down int, extra bool, base *model.Config) model.Config {
	var cfg model.Config
	nb := &model.Backend{Name: model.NodesBackend}
	for node := range 21 {
		if node < 20 || extra {
			nb.Servers = append(nb.Servers, model.Server{Addr: netip.AddrFrom4([4]byte{127, 81, 40, byte(node + 1)}), Maint: node == down})
		}
	}
	cfg.Backends = append(cfg.Backends, nb)
	for i := range n {
		be := &model.Backend{Name: fmt.Sprintf("be_default_svc%05d_80", i), Balance: "roundrobin", TrackNodes: true}
		for j := range 5 {
			be.Servers = append(be.Servers, model.Server{Addr: netip.AddrFrom4([4]byte{127, 81, 40, byte((i+j)%20 + 1)}), Port: uint16(30000 + i)})
		}
		if extra && i%4 == 0 {
			be.Servers = append(be.Servers, model.Server{Addr: netip.AddrFrom4([4]byte{127, 81, 40, 21}), Port: uint16(30000 + i)})
		}
		slices.SortFunc(be.Servers, func(a, b model.Server) int { return a.Key().Compare(b.Key()) })
		if base != nil && slices.Equal(base.Backends[i+1].Servers, be.Servers) {
			be = base.Backends[i+1]
		}
		cfg.Backends = append(cfg.Backends, be)
	}
	return cfg
}

// BenchmarkTrackedNodeChange: 1,000 Services following 20 nodes, each
// pass until HAProxy runs it, with the runtime requests of each kind of
// pass: a node out and back (one request on _nodes/sK); node 3 (in 250
// backends) deleted and back (deleted: one request, its followers owe
// their maintenance, owed.go; back: one request, its followers serve again
// with no request); a 21st node with a server in 250 of the backends
// joining and leaving, the same node each time (its servers return to the
// free slots that follow no node and remember them: a request per
// backend) or a new node each time (an address and a state per backend),
// also in every backend (a node joining every Service of
// externalTrafficPolicy Cluster);
// and, for comparison, a node out and back without _nodes (a request per
// backend it serves). Against a real API when HKS_DATAPLANE_URL (and
// _USERNAME, _PASSWORD) is set (it must serve nothing else: the backends
// are created and deleted here), else the test server with the real API's
// measured cost.
func BenchmarkTrackedNodeChange(b *testing.B) {
	c := newBenchAPI(b, time.Minute).c
	ctx := context.Background()
	d := New(Options{Client: c, ReloadPoll: 10 * time.Millisecond})
	defer d.Close()
	base := trackedCfg(1000, -1, false, nil)
	if _, err := d.Apply(ctx, base); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if _, err := d.Apply(ctx, model.Config{}); err != nil {
			b.Error(err)
		}
	}()
	// Without _nodes (--track-nodes=false, or single-Service mode): a node
	// out is its servers left out of every backend it serves.
	untracked := func(down int) model.Config {
		cfg := trackedCfg(1000, -1, false, nil)
		cfg.Backends = cfg.Backends[1:]
		for i, be := range cfg.Backends {
			nb := *be
			nb.TrackNodes, nb.Servers = false, slices.DeleteFunc(slices.Clone(be.Servers), func(s model.Server) bool { return s.Addr.As4()[3] == byte(down+1) })
			cfg.Backends[i] = &nb
		}
		return cfg
	}
	plain := untracked(-1)
	plainOut := untracked(3)
	for i, be := range plainOut.Backends {
		if len(be.Servers) == len(plain.Backends[i].Servers) {
			plainOut.Backends[i] = plain.Backends[i]
		}
	}
	deleted := edited(base, nodeAt(3), nil, func(int) bool { return false })
	// A new node each time: a 21st node at another address, in every
	// fourth Service.
	joined := func(every int) func(i int) model.Config {
		return func(i int) model.Config {
			a := netip.AddrFrom4([4]byte{127, 81, 41 + byte(i/250%10), byte(1 + i%250)})
			return edited(base, a, &model.Server{Addr: a}, func(s int) bool { return s%every == 0 })
		}
	}
	fresh := 0 // new nodes so far: never the same twice, across b.Run's rounds
	for _, tc := range []struct {
		name          string
		base, changed model.Config
		fresh         func(i int) model.Config // the changed config of the i-th new node, when not changed
		wantAtMost    int
		change, undo  string // the metrics' names
	}{
		{name: "node-out-and-back", base: base, changed: trackedCfg(1000, 3, false, &base), wantAtMost: 1, change: "out", undo: "back"},
		{name: "node-deleted-and-back-250-backends", base: base, changed: deleted, wantAtMost: 1, change: "deleted", undo: "back"},
		{name: "node-added-and-deleted-250-backends", base: base, changed: trackedCfg(1000, -1, true, &base), wantAtMost: 2*250 + 2, change: "added", undo: "deleted"},
		{name: "new-node-added-and-deleted-250-backends", base: base, fresh: joined(4), wantAtMost: 2*250 + 2, change: "added", undo: "deleted"},
		// As a node joins every Service of externalTrafficPolicy Cluster.
		{name: "new-node-added-and-deleted-1000-backends", base: base, fresh: joined(1), wantAtMost: 2*1000 + 2, change: "added", undo: "deleted"},
		{name: "untracked-node-out-and-back", base: plain, changed: plainOut, wantAtMost: 250, change: "out", undo: "back"},
	} {
		if _, err := d.Apply(ctx, tc.base); err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			var took [2]time.Duration
			var ops, passes [2]int
			for i := range b.N {
				cfg, k := tc.changed, i%2
				switch {
				case k == 1:
					cfg = tc.base
				case tc.fresh != nil:
					cfg = tc.fresh(fresh)
					fresh++
				}
				t := time.Now()
				res, err := d.Apply(ctx, cfg)
				took[k] += time.Since(t)
				if err != nil || res.Reloaded || res.Ops > tc.wantAtMost {
					b.Fatalf("%v reloaded %v ops %d", err, res.Reasons, res.Ops)
				}
				ops[k] += res.Ops
				passes[k]++
			}
			for k, name := range []string{tc.change, tc.undo} {
				if passes[k] > 0 {
					b.ReportMetric(float64(took[k].Microseconds())/1000/float64(passes[k]), "ms/"+name)
					b.ReportMetric(float64(ops[k])/float64(passes[k]), "requests/"+name)
				}
			}
			b.ReportMetric(float64(ops[0]+ops[1])/float64(b.N), "requests/pass")
			if b.N%2 == 1 {
				if _, err := d.Apply(ctx, tc.base); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
