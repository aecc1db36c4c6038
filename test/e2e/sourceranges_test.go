package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// probeFrom opens one connection to the frontend on port from the
// loopback address src and returns the node that answered.
func probeFrom(src string, port int32) (string, error) {
	return lab.ProbeFrom(src, fmt.Sprintf("%s:%d", serviceIP(), port), time.Second)
}

// admits reports nil once exactly the clients marked true are served
// through port (the others are cut before any byte).
func admits(port int32, clients map[string]bool) func() error {
	return func() error {
		for src, want := range clients {
			name, err := probeFrom(src, port)
			if got := err == nil && name != ""; got != want {
				return fmt.Errorf("client %s served %v (%q, %v), want %v", src, got, name, err, want)
			}
		}
		return nil
	}
}

// spec.loadBalancerSourceRanges is enforced from the Service through the
// real apiserver and a real HAProxy; a change of ranges needs no reload
// and leaves another Service on the same HAProxy untouched; ClientIP
// affinity keeps one client on one node, across a reload too.
func TestSourceRangesAndAffinity(t *testing.T) {
	e := newEnv(t)
	np := nodePort()
	for i, n := range []string{"n1", "n2", "n3"} {
		e.addNode(n, i+1, true, np, np+1)
	}
	port, other := int32(haproxytest.FreePort(t)), int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "db", Port: port, NodePort: np})
	e.updateService("db", func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"127.0.0.2/32", "192.0.2.0/24"} })
	e.createService(lab.Service{Namespace: ns, Name: "web", Port: other, NodePort: np + 1})
	e.startController()
	e.eventually("db admits only 127.0.0.2", admits(port, map[string]bool{"127.0.0.2": true, "127.0.0.3": false}))
	e.eventually("web admits everyone", admits(other, map[string]bool{"127.0.0.2": true, "127.0.0.3": true}))

	reloads := e.reloads()
	stop := e.startLoad(other) // the other Service, under load meanwhile
	e.updateService("db", func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"127.0.0.3/32"} })
	e.eventually("db admits only 127.0.0.3", admits(port, map[string]bool{"127.0.0.2": false, "127.0.0.3": true}))
	stop()
	if got := e.reloads(); got != reloads {
		t.Errorf("a change of source ranges reloaded HAProxy (%d reloads, was %d)", got, reloads)
	}

	// The annotation, when the field is empty.
	e.updateService("db", func(s *corev1.Service) {
		s.Spec.LoadBalancerSourceRanges = nil
		s.Annotations = map[string]string{settings.SourceRangesAnnotation: "127.0.0.4/32, 127.0.0.5/32"}
	})
	e.eventually("db admits 127.0.0.4-5", admits(port, map[string]bool{"127.0.0.3": false, "127.0.0.4": true, "127.0.0.5": true}))

	// ClientIP affinity: 50 connections of one client on one node.
	e.updateService("web", func(s *corev1.Service) {
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		sec := int32(600)
		s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &sec}}
	})
	e.eventually("stick table in config", func() error { return contains(e.config(), "stick-table type ipv6 size 1m expire 10m") })
	e.eventually("stick table in the running worker", func() error {
		e.runtime.Reset() // a connection of its own: the worker may be a new one
		out, err := e.runtime.Exec(bg, []string{"show table"})
		if err != nil {
			return err
		}
		if err := contains(strings.Join(out, ""), "table: "+e.haproxyBackend(fmt.Sprintf("be_%s_web_%d", ns, other))+","); err != nil {
			return fmt.Errorf("%w in %q", err, out)
		}
		return nil
	})
	spread := map[string]bool{} // new clients go round robin
	for i := range 6 {
		name, err := probeFrom(fmt.Sprintf("127.0.1.%d", i+1), other)
		if err != nil {
			t.Fatal(err)
		}
		spread[name] = true
	}
	if len(spread) != 3 {
		t.Errorf("6 new clients reached %v, want the 3 nodes", spread)
	}
	stuck := map[string]string{} // client: its node
	clients := func(n int) {
		t.Helper()
		for _, src := range []string{"127.0.0.6", "127.0.0.7"} {
			seen := map[string]int{}
			for range n {
				name, err := probeFrom(src, other)
				if err != nil {
					t.Fatal(err)
				}
				seen[name]++
				if stuck[src] == "" {
					stuck[src] = name
				}
			}
			if len(seen) != 1 || seen[stuck[src]] == 0 {
				t.Errorf("client %s reached %v, want %s only", src, seen, stuck[src])
			}
		}
	}
	clients(50)

	// A reload keeps the stick table (HAProxy's local peer hands it from
	// the old worker to the new one): a new Service reloads, the clients
	// are still in the table and keep their node. The worker must have
	// finished learning from its own predecessor first (HAProxy 2.6 waits
	// up to its resync timeout, 5 s, when that one had no peers section,
	// as here: affinity came with the last reload).
	e.eventually("the worker's peers resynced", func() error {
		e.runtime.Reset()
		out, err := e.runtime.Exec(bg, []string{"show peers"})
		if err != nil {
			return err
		}
		var flags uint32
		for _, l := range out {
			if i := strings.Index(l, " flags=0x"); i >= 0 && strings.Contains(l, "id="+render.PeersSection) {
				_, _ = fmt.Sscanf(l[i+len(" flags=0x"):], "%x", &flags)
			}
		}
		if flags&0x3 != 0x3 {
			return fmt.Errorf("not resynced: %q", out)
		}
		return nil
	})
	// A new Service of a balance no other has: a new frontend in ports
	// mode, a new class of spares with the pool (HKS_E2E_LISTENERS), a
	// reload either way.
	before := e.reloads()
	e.createService(lab.Service{Namespace: ns, Name: "third", Port: int32(haproxytest.FreePort(t)), NodePort: np + 2,
		Annotations: map[string]string{"haproxy-k8s-sync.io/balance": "first"}})
	e.eventually("a reload", func() error {
		if e.reloads() <= before {
			return fmt.Errorf("no reload yet")
		}
		return nil
	})
	e.eventually("the clients in the new worker's stick table", func() error {
		e.runtime.Reset()
		out, err := e.runtime.Exec(bg, []string{"show table " + e.haproxyBackend(fmt.Sprintf("be_%s_web_%d", ns, other))})
		if err != nil {
			return err
		}
		for _, c := range []string{"key=::ffff:127.0.0.6 ", "key=::ffff:127.0.0.7 "} {
			if err := contains(strings.Join(out, ""), c); err != nil {
				return fmt.Errorf("%w in %q", err, out)
			}
		}
		return nil
	})
	clients(20)
}
