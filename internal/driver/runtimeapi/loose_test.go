package runtimeapi

import (
	"context"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A node that joined after the last reload has its servers in slots that
// follow no node. Those slots carry the node check themselves: when the
// node's health endpoint fails, its servers leave service within the
// check's fall time, with no reload and no command from the controller,
// as the servers that follow a node do; and the controller does not take
// a server down by its check for a difference to fix.
func TestLooseSlotChecksItsNode(t *testing.T) {
	lb := startLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := newTrackWorld(t, 2, 3, 2)
	const inter, fall = 200 * time.Millisecond, 2
	config, health := w.checkedNodes(model.Check{Enabled: true, Inter: inter, Rise: 2, Fall: fall, HTTP: model.HTTPCheck{Path: "/healthz"}})
	if _, err := lb.d.Apply(ctx, config()); err != nil {
		t.Fatal(err)
	}
	w.checkTraffic("start")

	w.joined = 3 // node 2 joins: each backend takes it in a free slot bound to no node
	res, err := lb.d.Apply(ctx, config())
	if err != nil || res.Reloaded {
		t.Fatalf("node 2 joins: reloaded %v (%v), %v; want no reload", res.Reloaded, res.Reasons, err)
	}
	w.checkTraffic("node 2 joined")
	master := haproxy.NewMaster(lb.p.MasterSocket)
	before, err := master.ShowProc(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Node 2's check fails; Kubernetes still calls it Ready (no pass runs).
	health[2].SetHealthy(false)
	failed := time.Now()
	waitServed := func(step string, want bool) time.Duration {
		t.Helper()
		deadline := time.Now().Add(10 * inter * fall) // generous: the check takes fall x inter
		for {
			gone := 0
			for b := range w.ports {
				if w.served(b)[w.nodes[2].Name] != want {
					gone++
				}
			}
			if gone == 0 {
				return time.Since(failed)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: node 2 still %s in %d of %d backends after %v", step, map[bool]string{true: "out of service", false: "served"}[want],
					gone, len(w.ports), time.Since(failed))
			}
			time.Sleep(inter / 4) // poll interval, bounded by the deadline
		}
	}
	took := waitServed("node 2's check fails", false)
	t.Logf("node 2's servers in loose slots out of service %v after its check failed (inter %v, fall %d)", took, inter, fall)

	// The controller sees nothing to fix: a server down by its check is
	// the node's check failing, not a state of the slot.
	res, err = lb.d.Apply(ctx, config())
	if err != nil || res.Reloaded || res.Ops != 0 {
		t.Fatalf("pass while node 2's check fails: reloaded %v, %d operations, %v; want none", res.Reloaded, res.Ops, err)
	}
	if drift, err := lb.d.Verify(ctx); err != nil || drift {
		t.Fatalf("verify while node 2's check fails: drift %v, %v", drift, err)
	}
	after, err := master.ShowProc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Reloads != before.Reloads {
		t.Fatalf("%d reloads, want 0", after.Reloads-before.Reloads)
	}

	// A reload (a new Service) binds node 2's slots: they follow its node
	// slot, down by the same check, and come back with it.
	w.ports = append(w.ports, haproxytest.FreePort(t))
	if res, err = lb.d.Apply(ctx, config()); err != nil || !res.Reloaded {
		t.Fatalf("a new Service: reloaded %v, %v; want a reload", res.Reloaded, err)
	}
	failed = time.Now()
	waitServed("node 2's check still fails after the reload", false)
	health[2].SetHealthy(true)
	failed = time.Now()
	waitServed("node 2's check passes again", true)
	w.checkTraffic("node 2 back")
}
