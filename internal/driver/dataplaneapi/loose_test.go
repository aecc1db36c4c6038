package dataplaneapi

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// A node that joined since the Services' sections were last written has
// its servers in slots that follow no node. Those slots carry the node
// check themselves (written with the sections, as the HAProxy driver
// renders them): against the real API, when the node's health endpoint
// fails its servers go down within the check's fall time, with no reload
// and nothing for the controller to fix.
func TestContractLooseSlotChecksItsNode(t *testing.T) {
	for _, path := range []struct {
		name string
		raw  int
	}{{"transactions", -1}, {"raw", 1}} {
		t.Run(path.name, func(t *testing.T) {
			run(t, func(t *testing.T, a *api) { looseSlotChecksItsNode(t, a, path.raw) })
		})
	}
}

func looseSlotChecksItsNode(t *testing.T, a *api, rawMin int) {
	ctx := context.Background()
	t.Cleanup(func() { a.deleteSection(t, dataplane.BackendPath(model.NodesBackend)) }) // last: after its followers
	const joined = "127.81.13.3"
	checkPort := freeTCPPort(t)
	var health []*lab.HealthServer
	for _, n := range []string{"127.81.13.1", "127.81.13.2", joined} {
		h, err := lab.NewHealthServer(fmt.Sprintf("%s:%d", n, checkPort))
		if err != nil {
			t.Skipf("health stand-in: %v", err)
		}
		t.Cleanup(h.Close)
		health = append(health, h)
	}
	const inter, fall = 200 * time.Millisecond, 2
	w := newTrackWorld(t, a, uint16(freeTCPPort(t)), "127.81.13.1", "127.81.13.2")
	w.check = model.Check{Enabled: true, Inter: inter, Rise: 2, Fall: fall, Port: uint16(checkPort), HTTP: model.HTTPCheck{Path: "/healthz"}}
	d := a.driver(Options{RawMinWrites: rawMin})
	apply(t, d, w.cfg())
	r0 := a.reloads(t)
	w.nodes = append(w.nodes, model.Server{Addr: netip.MustParseAddr(joined)})
	w.setServers()
	if res, err := d.Apply(ctx, w.cfg()); err != nil || res.Reloaded {
		t.Fatalf("a node joins: reloaded %v err %v, want runtime requests only", res.Reloaded, err)
	}

	// The configuration: bound slots follow, unbound ones check.
	for _, s := range w.svcs {
		var base Object
		if _, err := a.c.Do(ctx, "GET", dataplane.BackendPath(s.Name), nil, nil, &base); err != nil || base["adv_check"] != "httpchk" {
			t.Errorf("%s: adv_check %v (%v), want httpchk: the node check is an HTTP one", s.Name, base["adv_check"], err)
		}
		srvs, _, err := a.c.List(ctx, dataplane.ServersPath(s.Name), "")
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range srvs {
			_, bound := o["track"]
			port, _ := toInt(o["health_check_port"])
			checked := o["check"] == "enabled" && port == int64(checkPort)
			if bound == checked {
				t.Errorf("%s/%v: track %v, check %v port %v: want a slot either bound or checked on the node check's port", s.Name, o["name"], o["track"], o["check"], o["health_check_port"])
			}
		}
	}
	if a.srv != nil {
		return // the test server runs no health checks
	}

	// What HAProxy does with them: the joined node's servers go down
	// with its check, and come back with it.
	state := func(be string) string {
		rs, err := a.c.RuntimeServers(ctx, be)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r["address"] == joined {
				return fmt.Sprint(r["operational_state"])
			}
		}
		return "absent"
	}
	wait := func(step, want string) time.Duration {
		t.Helper()
		start := time.Now()
		deadline := start.Add(10 * inter * fall)
		for {
			ok := true
			for _, s := range w.svcs {
				if got := state(s.Name); got != want {
					ok = false
					if time.Now().After(deadline) {
						t.Fatalf("%s: %s's server on %s is %s after %v, want %s", step, s.Name, joined, got, time.Since(start), want)
					}
				}
			}
			if ok {
				return time.Since(start)
			}
			time.Sleep(inter / 4) // poll interval, bounded by the deadline
		}
	}
	wait("joined", "up")
	health[2].SetHealthy(false)
	t.Logf("the joined node's servers, in slots following no node, down %v after its check failed (inter %v, fall %d)",
		wait("its check fails", "down"), inter, fall)
	if res, err := d.Apply(ctx, w.cfg()); err != nil || res.Reloaded || res.Ops != 0 {
		t.Errorf("a pass while its check fails: ops %d reloaded %v err %v, want nothing to do", res.Ops, res.Reloaded, err)
	}
	health[2].SetHealthy(true)
	wait("its check passes again", "up")
	if r := a.reloads(t); r != r0 {
		t.Errorf("%d reloads, want 0", r-r0)
	}
}
