package tproxy

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// TestLargerSpare: behind the fixed listener every class keeps a free
// large spare (spares/sized.go). A new Service with more servers than a
// free spare's slots (plan.MinSlots), and a Service whose servers outgrow
// its spare, each take a large one with a map change: served, and no
// reload for their slots (a reload may follow in the same pass, the pool
// growing another large spare ahead of need: this driver has no settle
// time, so the growth is not held back here; TestServedWhileGrowthDeferred
// holds it back).
func TestLargerSpare(t *testing.T) {
	l := startDPWith(t, render.ListenersTProxy, spares.Policy{Spares: 3, Other: 1, LowWater: 1})
	hd := l.hd
	// Servers that answer, on the load balancer's loopback: name i.
	var servers []model.Server
	for i := range 2 * spares.LargeSlots / 3 {
		servers = append(servers, model.Server{Addr: netip.MustParseAddr("127.0.0.1"), Port: answering(t, l.lab.LB, fmt.Sprintf("s%d", i))})
	}
	ctx := context.Background()
	apply := func(what string, cfg model.Config) {
		t.Helper()
		res, err := l.drv.Apply(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Reasons {
			if strings.Contains(r, "exhausted") {
				t.Fatalf("%s: reloaded for its slots: %s", what, strings.Join(res.Reasons, "; "))
			}
		}
	}
	svc := func(name string, port uint16, n int) (model.Frontend, *model.Backend) {
		return model.Frontend{Name: "fe_" + name, Service: "default/" + name, Backend: "be_" + name, Binds: []model.Bind{bind(vipA, port)}},
			&model.Backend{Name: "be_" + name, Service: "default/" + name, Balance: "roundrobin", Servers: servers[:n]}
	}
	// served polls until n connections to port are all answered, by as
	// many different servers as the backend has (roundrobin).
	served := func(port uint16, n int) {
		t.Helper()
		dst := netip.AddrPortFrom(vipA, port)
		err := netlab.Eventually(ctx, 20*time.Second, func() error {
			seen := map[string]bool{}
			for range n {
				got, err := ask(l.lab.Client, netip.Addr{}, dst)
				if got == "" {
					return fmt.Errorf("%s: not answered (%v)", dst, err)
				}
				seen[got] = true
			}
			if len(seen) != n {
				return fmt.Errorf("%s: answered by %d servers, want %d", dst, len(seen), n)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	feA, beA := svc("a", 80, 2)
	apply("a", model.Config{Frontends: []model.Frontend{feA}, Backends: []*model.Backend{beA}})
	served(80, 2)

	// A new Service with more servers than a free spare has slots.
	feB, beB := svc("b", 81, plan4+2)
	apply("a new Service with more servers than a free spare's slots",
		model.Config{Frontends: []model.Frontend{feA, feB}, Backends: []*model.Backend{beA, beB}})
	served(81, plan4+2)

	// a outgrows its spare: it moves to a large one.
	smallA := hd.HAProxyBackend(beA.Name)
	feA2, beA2 := svc("a", 80, len(servers))
	apply("a Service outgrowing its spare", model.Config{Frontends: []model.Frontend{feA2, feB}, Backends: []*model.Backend{beA2, beB}})
	served(80, len(servers))
	if got := hd.HAProxyBackend(beA.Name); got == smallA {
		t.Errorf("a still in %s", got)
	}
}

// plan4 is a free spare's slots (plan.MinSlots).
const plan4 = 4
