package runtimeapi

import (
	"context"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A node back from NotReady whose check fails (its kube-proxy not
// answering /healthz yet) serves nothing: its slot in _nodes is held
// until the node check passes, and the servers following it with it;
// once the check passes, it serves again, with no command from the
// controller.
func TestReturningNodeWaitsForItsCheck(t *testing.T) {
	lb := startLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := newTrackWorld(t, 2, 2, 2)
	const inter, rise, fall = 200 * time.Millisecond, 2, 2
	config, health := w.checkedNodes(model.Check{Enabled: true, Inter: inter, Rise: rise, Fall: fall, HTTP: model.HTTPCheck{Path: "/healthz"}})
	apply := func(step string) {
		t.Helper()
		if res, err := lb.d.Apply(ctx, config()); err != nil || (step != "start" && res.Reloaded) {
			t.Fatalf("%s: reloaded %v, %v; want no reload", step, res.Reloaded, err)
		}
	}
	apply("start")
	w.checkTraffic("start")
	w.down[1] = true // Kubernetes: node 1 NotReady
	apply("node 1 down")
	w.checkTraffic("node 1 down")

	health[1].SetHealthy(false) // its kube-proxy does not answer yet
	w.down[1] = false           // Kubernetes: Ready again
	apply("node 1 back")
	// Longer than the check would take to notice (fall x inter) were the
	// node put in service at once.
	for end := time.Now().Add(3 * fall * inter); time.Now().Before(end); {
		for b := range w.ports {
			if w.served(b)[w.nodes[1].Name] {
				t.Fatalf("backend %d served by node 1 while its check fails", b)
			}
		}
	}
	health[1].SetHealthy(true)
	deadline := time.Now().Add(20 * rise * inter)
	for {
		n := 0
		for b := range w.ports {
			if w.served(b)[w.nodes[1].Name] {
				n++
			}
		}
		if n == len(w.ports) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 1 serves %d of %d backends %v after its check passes", n, len(w.ports), 20*rise*inter)
		}
		time.Sleep(inter / 4) // poll interval, bounded by the deadline
	}
	w.checkTraffic("node 1 checked")
}
