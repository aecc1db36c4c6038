package runtimeapi

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A node that joined after the last reload has its servers in slots that
// follow no node. Those slots carry no check (HAProxy would reserve a file
// descriptor for each, free or not: issue 35): until a reload binds them
// they carry their node's maintenance, which the plan sets; the reload
// binds them to their node's slot, and its check then takes them out of
// service and back, with no command from the controller.
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
	if cfgText, err := os.ReadFile(lb.cfgPath); err != nil || strings.Contains(string(cfgText), "disabled check") {
		t.Fatalf("free slots with a check of their own (%v):\n%s", err, cfgText)
	}

	w.joined = 3 // node 2 joins: each backend takes it in a free slot bound to no node
	res, err := lb.d.Apply(ctx, config())
	if err != nil || res.Reloaded {
		t.Fatalf("node 2 joins: reloaded %v (%v), %v; want no reload", res.Reloaded, res.Reasons, err)
	}
	w.checkTraffic("node 2 joined")
	w.down[2] = true // Kubernetes: node 2 NotReady
	if res, err = lb.d.Apply(ctx, config()); err != nil || res.Reloaded {
		t.Fatalf("node 2 down: reloaded %v, %v; want no reload", res.Reloaded, err)
	}
	w.checkTraffic("node 2 down")
	w.down[2] = false
	if res, err = lb.d.Apply(ctx, config()); err != nil || res.Reloaded {
		t.Fatalf("node 2 back: reloaded %v, %v; want no reload", res.Reloaded, err)
	}
	w.checkTraffic("node 2 back")

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

	// A reload (a new Service) binds node 2's slots: they follow its node
	// slot, down by the same check, and come back with it.
	w.ports = append(w.ports, haproxytest.FreePort(t))
	if res, err = lb.d.Apply(ctx, config()); err != nil || !res.Reloaded {
		t.Fatalf("a new Service: reloaded %v, %v; want a reload", res.Reloaded, err)
	}
	health[2].SetHealthy(false) // Kubernetes still calls it Ready (no pass runs)
	failed = time.Now()
	took := waitServed("node 2's check fails after the reload", false)
	t.Logf("node 2's servers out of service %v after its check failed (inter %v, fall %d)", took, inter, fall)
	health[2].SetHealthy(true)
	failed = time.Now()
	waitServed("node 2's check passes again", true)
	w.checkTraffic("node 2 back")
}
