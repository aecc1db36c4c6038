package runtimeapi

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// probeFrom is lab.ProbeFrom with the tests' timeout.
func probeFrom(src, addr string) (string, error) { return lab.ProbeFrom(src, addr, 2*time.Second) }

// rangesWorld: two node stand-ins behind two frontends, a restricted one
// and an open one, on loopback; clients come from other 127.x addresses.
type rangesWorld struct {
	nodes      []*lab.NodeServer
	port       uint16 // the nodes' port
	restricted string // listen address of the restricted frontend
	open       string
	fePorts    [2]int
}

func newRangesWorld(t *testing.T) *rangesWorld {
	w := &rangesWorld{port: uint16(haproxytest.FreePort(t))}
	for i := range 2 {
		n := lab.NewNodeServer(fmt.Sprint("node-", i), fmt.Sprintf("127.79.0.%d", i+1))
		if err := n.Listen(int(w.port)); err != nil {
			t.Skipf("node stand-in: %v", err)
		}
		t.Cleanup(n.Close)
		w.nodes = append(w.nodes, n)
	}
	w.fePorts = [2]int{haproxytest.FreePort(t), haproxytest.FreePort(t)}
	w.restricted = fmt.Sprintf("127.0.0.1:%d", w.fePorts[0])
	w.open = fmt.Sprintf("127.0.0.1:%d", w.fePorts[1])
	return w
}

func (w *rangesWorld) config(ranges []netip.Prefix, affinity time.Duration) model.Config {
	var servers []model.Server
	for _, n := range w.nodes {
		servers = append(servers, model.Server{Addr: netip.MustParseAddr(n.IP), Port: w.port})
	}
	lo := netip.MustParseAddr("127.0.0.1")
	return model.Config{
		Frontends: []model.Frontend{
			{Name: "fe_a", Service: "ns/a", Backend: "be_a", Binds: []model.Bind{{Addr: lo, Port: uint16(w.fePorts[0])}}, SourceRanges: ranges},
			{Name: "fe_b", Service: "ns/b", Backend: "be_b", Binds: []model.Bind{{Addr: lo, Port: uint16(w.fePorts[1])}}},
		},
		Backends: []*model.Backend{
			{Name: "be_a", Service: "ns/a", Balance: "roundrobin", Affinity: affinity, Servers: servers},
			{Name: "be_b", Service: "ns/b", Balance: "roundrobin", Servers: servers},
		},
	}
}

func pfxs(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, x := range s {
		out = append(out, netip.MustParsePrefix(x))
	}
	return out
}

// expectServed checks which clients reach a frontend: served ones get a
// node's answer, the others are cut before any byte.
func expectServed(t *testing.T, addr string, served map[string]bool) {
	t.Helper()
	for src, want := range served {
		name, err := probeFrom(src, addr)
		if got := err == nil && strings.HasPrefix(name, "node-"); got != want {
			t.Errorf("client %s to %s: served %v (%q, %v), want %v", src, addr, got, name, err, want)
		}
	}
}

func workerPID(t *testing.T, d *HAProxy) string {
	t.Helper()
	info, err := d.rt.ShowInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info["Pid"]
}

func TestSourceRangesWithoutReload(t *testing.T) {
	l := startLab(t)
	w := newRangesWorld(t)
	ctx := context.Background()
	if l.d.opts.Render.ACLDir == "" {
		t.Fatalf("no ACL directory beside %s", l.cfgPath)
	}

	res, err := l.d.Apply(ctx, w.config(pfxs("127.0.0.2/32", "192.0.2.0/24"), 0))
	if err != nil || !res.Reloaded {
		t.Fatalf("first apply: reloaded %v, %v", res.Reloaded, err)
	}
	everyone := map[string]bool{"127.0.0.2": true, "127.0.0.3": true, "127.0.0.4": true}
	expectServed(t, w.open, everyone)
	expectServed(t, w.restricted, map[string]bool{"127.0.0.2": true, "127.0.0.3": false, "127.0.0.4": false})

	// Other ranges: the Runtime API, no reload, and the worker that
	// serves the other frontend is the same.
	pid := workerPID(t, l.d)
	res, err = l.d.Apply(ctx, w.config(pfxs("127.0.0.3/32", "127.0.0.4/31"), 0))
	if err != nil || res.Reloaded {
		t.Fatalf("ranges change: reloaded %v (%v), %v", res.Reloaded, res.Reasons, err)
	}
	if got := workerPID(t, l.d); got != pid {
		t.Errorf("worker changed from %s to %s", pid, got)
	}
	expectServed(t, w.restricted, map[string]bool{"127.0.0.2": false, "127.0.0.3": true, "127.0.0.4": true, "127.0.0.5": true, "127.0.0.6": false})
	expectServed(t, w.open, everyone)
	b, err := os.ReadFile(render.ACLFile(l.d.opts.Render.ACLDir, "fe_a", false))
	if err != nil || string(b) != "127.0.0.3/32\n127.0.0.4/31\n" {
		t.Errorf("ACL file %q, %v", b, err)
	}

	// A restarted HAProxy reads the ranges in force from the file.
	l.p.Restart(t)
	l.d.Invalidate()
	if _, err := l.d.Apply(ctx, w.config(pfxs("127.0.0.3/32", "127.0.0.4/31"), 0)); err != nil {
		t.Fatal(err)
	}
	expectServed(t, w.restricted, map[string]bool{"127.0.0.2": false, "127.0.0.3": true})

	// A restarted controller (a new driver) pushes what it wants once,
	// still without a reload.
	d2 := NewHAProxy(l.d.opts)
	t.Cleanup(func() { _ = d2.Close() })
	res, err = d2.Apply(ctx, w.config(pfxs("127.0.0.2/32"), 0))
	if err != nil || res.Reloaded {
		t.Fatalf("new driver: reloaded %v (%v), %v", res.Reloaded, res.Reasons, err)
	}
	expectServed(t, w.restricted, map[string]bool{"127.0.0.2": true, "127.0.0.3": false})

	// No ranges at all is structure: a reload, and the file goes.
	res, err = d2.Apply(ctx, w.config(nil, 0))
	if err != nil || !res.Reloaded {
		t.Fatalf("ranges removed: reloaded %v, %v", res.Reloaded, err)
	}
	expectServed(t, w.restricted, everyone)
	for _, v6 := range []bool{false, true} {
		if _, err := os.Stat(render.ACLFile(l.d.opts.Render.ACLDir, "fe_a", v6)); !os.IsNotExist(err) {
			t.Errorf("ACL file of an open frontend left: %v", err)
		}
	}
}

func TestClientAffinity(t *testing.T) {
	l := startLab(t)
	w := newRangesWorld(t)
	if _, err := l.d.Apply(context.Background(), w.config(nil, time.Hour)); err != nil {
		t.Fatal(err)
	}
	// Round robin alone alternates: the open frontend reaches both.
	seen := map[string]int{}
	for range 4 {
		name, err := probeFrom("127.0.0.2", w.open)
		if err != nil {
			t.Fatal(err)
		}
		seen[name]++
	}
	if len(seen) != 2 {
		t.Fatalf("without affinity one client reached %v, want both nodes", seen)
	}
	// With affinity, 50 connections of one client land on one node, and
	// other clients spread over both.
	for _, src := range []string{"127.0.0.2", "127.0.0.3"} {
		seen := map[string]int{}
		for range 50 {
			name, err := probeFrom(src, w.restricted)
			if err != nil {
				t.Fatal(err)
			}
			seen[name]++
		}
		if len(seen) != 1 {
			t.Errorf("client %s reached %v, want one node", src, seen)
		}
	}
	all := map[string]bool{}
	for i := range 8 {
		name, err := probeFrom(fmt.Sprintf("127.0.1.%d", i+1), w.restricted)
		if err != nil {
			t.Fatal(err)
		}
		all[name] = true
	}
	if len(all) != 2 {
		t.Errorf("8 clients reached %v, want both nodes", all)
	}
}
