package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// A node that goes NotReady, is excluded or is deleted leaves every backend
// it is in, whatever the Service's check (its own, none, or following its
// node) and traffic policy (Cluster, Local with a ready Pod on the node),
// within the bound of the backends that follow their node: HAProxy's
// `show servers state` has none of its servers in service (issue 36).
// Each change is made three times, the node coming back in between.
func TestNodeLeavesEveryBackend(t *testing.T) {
	e := newEnv(t)
	for i, n := range []string{"n1", "n2", "n3"} {
		e.addNode(n, i+1, true)
	}
	kinds := []struct {
		name  string
		check string
		local bool
	}{{"own", "true", false}, {"own-local", "true", true}, {"track", "auto", false}, {"track-local", "auto", true},
		{"nocheck", "false", false}, {"nocheck-local", "false", true}}
	np := nodePort()
	for i, k := range kinds {
		for j := range 2 {
			name := fmt.Sprintf("%s-%d", k.name, j)
			e.createService(lab.Service{Namespace: ns, Name: name, Port: int32(haproxytest.FreePort(t)), NodePort: np + int32(2*i+j),
				Local: k.local, Annotations: map[string]string{settings.Prefix + "check": k.check}})
			// A ready Pod on every node: each node serves the Local ones.
			e.setEndpoints(name, pod(10*i+3*j+1, "n1"), pod(10*i+3*j+2, "n2"), pod(10*i+3*j+3, "n3"))
		}
	}
	e.startController()
	n2 := fmt.Sprintf("127.%d.0.2", e.subnet)
	e.eventually("n2 in service in every backend", e.inService(n2, len(kinds)*2, true))

	nodes := e.client.CoreV1().Nodes()
	for round := range 3 {
		for _, c := range []struct {
			what     string
			do, undo func() error
		}{
			{"NotReady", func() error { return lab.SetNodeReady(bg, e.client, "n2", false) }, func() error { return lab.SetNodeReady(bg, e.client, "n2", true) }},
			{"excluded", func() error { return lab.SetNodeExcluded(bg, e.client, "n2", true) }, func() error { return lab.SetNodeExcluded(bg, e.client, "n2", false) }},
			{"deleted", func() error { return nodes.Delete(bg, "n2", metav1.DeleteOptions{}) }, func() error { return lab.CreateNode(bg, e.client, "n2", n2, true) }},
		} {
			if err := c.do(); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			// The backends that follow n2 drop it through its _nodes
			// server; every other backend must follow within a second.
			e.eventually(fmt.Sprintf("round %d: %s n2 leaves a backend that follows it", round, c.what), e.trackedOut(n2))
			tracked := time.Since(start)
			deadline := time.Now().Add(time.Second)
			var err error
			for {
				if err = e.inService(n2, len(kinds)*2, false)(); err == nil || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond) // poll interval
			}
			if err != nil {
				t.Fatalf("round %d: %s n2 left the following backends in %s, yet a second later: %v", round, c.what, tracked, err)
			}
			if err := c.undo(); err != nil {
				t.Fatal(err)
			}
			e.eventually(fmt.Sprintf("round %d: n2 back after %s", round, c.what), e.inService(n2, len(kinds)*2, true))
		}
	}
}

// inService returns nil when each of the Services' backends (want of
// them) has a server at addr in service (in), or none does (!in), as
// HAProxy's `show servers state` says: in service is not in maintenance,
// set on the server or inherited from the node it follows.
func (e *env) inService(addr string, want int, in bool) func() error {
	return func() error {
		states, err := e.serversState()
		if err != nil {
			return err
		}
		has := map[string]bool{}
		occupied := e.occupiedSpares() // a Service's backend with a pool
		for _, s := range states {
			if s.Backend == model.NodesBackend || !strings.HasPrefix(s.Backend, "be_") && !occupied[s.Backend] {
				continue
			}
			if _, ok := has[s.Backend]; !ok {
				has[s.Backend] = false
			}
			if s.Addr.String() == addr && !s.Maint() {
				has[s.Backend] = true
			}
		}
		if len(has) != want {
			return fmt.Errorf("%d backends, want %d", len(has), want)
		}
		var wrong []string
		for be, h := range has {
			if h != in {
				wrong = append(wrong, be)
			}
		}
		if len(wrong) > 0 {
			return fmt.Errorf("in service %v, want %v, in %v", !in, in, wrong)
		}
		return nil
	}
}

// trackedOut returns nil once a backend whose servers follow their node
// has no server at addr in service.
func (e *env) trackedOut(addr string) func() error {
	return func() error {
		states, err := e.serversState()
		if err != nil {
			return err
		}
		for _, s := range states {
			if strings.HasPrefix(s.Backend, "be_"+ns+"_track-0") && s.Addr.String() == addr && !s.Maint() {
				return fmt.Errorf("%s/%s in service", s.Backend, s.Server)
			}
		}
		return nil
	}
}

// serversState is `show servers state` of the worker running now, on a
// connection of its own (a kept one would still talk to a worker a reload
// replaced).
func (e *env) serversState() ([]haproxy.ServerState, error) {
	rt := haproxy.NewRuntime(e.hap.StatsSocket)
	defer rt.Close()
	return rt.ShowServersState(bg)
}
