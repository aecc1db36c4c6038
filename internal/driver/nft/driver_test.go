package nft

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

const (
	lbPort   = 51820
	nodePort = 31820
)

var listen = netip.AddrPortFrom(netlab.LBAddr, lbPort)

func wg(balance string, nodes ...*netlab.Node) model.UDPService {
	u := model.UDPService{Name: "udp_vpn_wg_51820", Service: "vpn/wg", Binds: []model.Bind{{Port: lbPort}}, Balance: balance, Probe: true}
	for _, n := range nodes {
		u.Servers = append(u.Servers, model.Server{Addr: n.Addr, Port: nodePort})
	}
	return u
}

func newDriver(t *testing.T, lab *netlab.Lab, h Health) *Driver {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	n := new(atomic.Int64)
	d, err := New(ctx, Options{NetNS: netlab.Path(lab.LB), EnableForwarding: true, Health: h, onBatch: func() { n.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	batchCounts.Store(d, n)
	return d
}

// batchCounts counts each test driver's netlink batches (Options.onBatch).
var batchCounts sync.Map // *Driver → *atomic.Int64

// batches is how many netlink batches d has sent.
func batches(d *Driver) int64 {
	n, _ := batchCounts.Load(d)
	return n.(*atomic.Int64).Load()
}

func apply(t *testing.T, d *Driver, udp ...model.UDPService) {
	t.Helper()
	if _, err := d.Apply(context.Background(), model.Config{UDP: udp}); err != nil {
		t.Fatal(err)
	}
}

// flows opens n flows from the client and returns the node each reached.
func flows(t *testing.T, lab *netlab.Lab, n int, src func(i int) netip.AddrPort) ([]*netlab.Flow, []string) {
	t.Helper()
	var fs []*netlab.Flow
	var nodes []string
	for i := range n {
		f := lab.Dial(src(i), listen)
		node, err := f.Ask(2 * time.Second)
		if err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
		fs, nodes = append(fs, f), append(nodes, node)
	}
	return fs, nodes
}

func anyPort(i int) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr("192.0.2.2"), 0) }

func count(nodes []string) map[string]int {
	out := map[string]int{}
	for _, n := range nodes {
		out[n]++
	}
	return out
}

func TestDriverRoundRobinChangesAndConntrack(t *testing.T) {
	lab := netlab.New(t, 3)
	lab.Echo(nodePort)
	d := newDriver(t, lab, Health{Kind: "none"})
	n1, n2, n3 := lab.Nodes[0], lab.Nodes[1], lab.Nodes[2]
	apply(t, d, wg(model.BalanceRoundRobin, n1, n2, n3))

	fs, nodes := flows(t, lab, 30, anyPort)
	if c := count(nodes); c["n1"] != 10 || c["n2"] != 10 || c["n3"] != 10 {
		t.Fatalf("roundrobin over 30 flows: %v, want 10 each", c)
	}
	// Every flow keeps its node.
	for i, f := range fs {
		if got, err := f.Ask(time.Second); err != nil || got != nodes[i] {
			t.Fatalf("flow %d moved from %s to %s (%v)", i, nodes[i], got, err)
		}
	}

	// n2 leaves: one batch; flows to n1 and n3 keep their node, n2's
	// conntrack entries are gone and its flows move to a live node.
	before := batches(d)
	apply(t, d, wg(model.BalanceRoundRobin, n1, n3))
	if got := batches(d) - before; got != 1 {
		t.Errorf("a server change took %d batches, want 1", got)
	}
	if n := conntrackTo(t, lab, n2.Addr); n != 0 {
		t.Errorf("%d conntrack entries to the removed node remain", n)
	}
	if n := conntrackTo(t, lab, n1.Addr); n != 10 {
		t.Errorf("%d conntrack entries to n1, want its 10", n)
	}
	for i, f := range fs {
		got, err := f.Ask(time.Second)
		switch {
		case err != nil:
			t.Fatalf("flow %d: %v", i, err)
		case nodes[i] != "n2" && got != nodes[i]:
			t.Errorf("flow %d moved from %s to %s though its node stayed", i, nodes[i], got)
		case nodes[i] == "n2" && got == "n2":
			t.Errorf("flow %d still reaches the removed node", i)
		}
	}

	// n2 back: one batch again, the flows stay where they are.
	before = batches(d)
	apply(t, d, wg(model.BalanceRoundRobin, n1, n2, n3))
	if got := batches(d) - before; got != 1 {
		t.Errorf("a server change took %d batches, want 1", got)
	}
	_, nodes = flows(t, lab, 9, anyPort)
	if c := count(nodes); c["n1"] != 3 || c["n2"] != 3 || c["n3"] != 3 {
		t.Errorf("after n2 came back, 9 new flows: %v, want 3 each", c)
	}

	// The same model again is no batch at all.
	before = batches(d)
	apply(t, d, wg(model.BalanceRoundRobin, n1, n2, n3))
	if got := batches(d) - before; got != 0 {
		t.Errorf("the same model sent %d batches", got)
	}
}

func conntrackTo(t *testing.T, lab *netlab.Lab, a netip.Addr) int {
	t.Helper()
	n, err := netlab.UDPFlowsTo(lab.LB, a)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func listTable(t *testing.T, lab *netlab.Lab) string {
	t.Helper()
	out, err := lab.Exec(lab.LB, "nft", "list", "table", "inet", Table)
	if err != nil {
		t.Fatalf("nft list: %v: %s", err, out)
	}
	return out
}

// With balance source, each client address keeps one node, whatever its
// source port; the clients spread over the nodes.
func TestDriverSourceHash(t *testing.T) {
	lab := netlab.New(t, 3)
	lab.Echo(nodePort)
	d := newDriver(t, lab, Health{Kind: "none"})
	apply(t, d, wg(model.BalanceSource, lab.Nodes...))
	seen := map[string]bool{}
	for c := 10; c < 30; c++ {
		src := netip.AddrPortFrom(netip.MustParseAddr(fmt.Sprintf("192.0.2.%d", c)), 0)
		_, nodes := flows(t, lab, 4, func(int) netip.AddrPort { return src })
		if cnt := count(nodes); len(cnt) != 1 {
			t.Errorf("client %s reached %v, want one node", src.Addr(), cnt)
		}
		seen[nodes[0]] = true
	}
	if len(seen) < 2 {
		t.Errorf("20 clients all reached %v", seen)
	}
}

// A deleted port leaves the table (and its datagrams get no answer); a
// driver that starts on an existing table (a controller restart) sends
// nothing when the model is what the table holds.
func TestDriverRemoveAndRestart(t *testing.T) {
	lab := netlab.New(t, 2)
	lab.Echo(nodePort)
	d := newDriver(t, lab, Health{Kind: "none"})
	other := wg(model.BalanceRoundRobin, lab.Nodes[1])
	other.Name, other.Binds = "udp_vpn_other_4500", []model.Bind{{Addr: netlab.LBAddr, Port: 4500}}
	apply(t, d, wg(model.BalanceRoundRobin, lab.Nodes...), other)
	table := listTable(t, lab)

	restarted := newDriver(t, lab, Health{Kind: "none"})
	apply(t, restarted, wg(model.BalanceRoundRobin, lab.Nodes...), other)
	if n := batches(restarted); n != 0 {
		t.Errorf("a restarted driver sent %d batches for an unchanged model", n)
	}
	if got := listTable(t, lab); got != table {
		t.Errorf("the table changed across a restart:\n%s\nwant\n%s", got, table)
	}

	apply(t, restarted, other)
	if got := listTable(t, lab); strings.Contains(got, "udp_vpn_wg_51820") || strings.Contains(got, " 51820") {
		t.Errorf("the deleted port is still in the table:\n%s", got)
	}
	if _, err := lab.Dial(anyPort(0), listen).Ask(300 * time.Millisecond); err == nil {
		t.Errorf("the deleted port still answers")
	}
	if node, err := lab.Dial(anyPort(0), netip.AddrPortFrom(netlab.LBAddr, 4500)).Ask(2 * time.Second); err != nil || node != "n2" {
		t.Errorf("the other port: %q, %v", node, err)
	}
	// Nothing left: the table stays (owned, empty), and Cleanup removes it.
	apply(t, restarted)
	if err := Cleanup(netlab.Path(lab.LB)); err != nil {
		t.Fatal(err)
	}
	if out, _ := lab.Exec(lab.LB, "nft", "list", "tables"); strings.Contains(out, Table) {
		t.Errorf("Cleanup left the table: %s", out)
	}
}

// A node failing its health probe leaves within two probe intervals (its
// flows move), and comes back after two good probes.
func TestDriverHealth(t *testing.T) {
	lab := netlab.New(t, 3)
	lab.Echo(nodePort)
	lab.Health(10256)
	interval := 100 * time.Millisecond
	d := newDriver(t, lab, Health{Kind: "http", Port: 10256, Path: "/healthz", Interval: interval})
	n3 := lab.Nodes[2]
	apply(t, d, wg(model.BalanceRoundRobin, lab.Nodes...))
	fs, nodes := flows(t, lab, 6, anyPort)

	n3.SetHealthy(false)
	start := time.Now()
	err := netlab.Eventually(context.Background(), 5*time.Second, func() error {
		if strings.Contains(listTable(t, lab), n3.Addr.String()) {
			return fmt.Errorf("n3 still in the table")
		}
		if n := conntrackTo(t, lab, n3.Addr); n != 0 {
			return fmt.Errorf("%d conntrack entries to n3", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Not after one failed probe (TestProberRiseFall counts exactly).
	failed := n3.Failed.Load()
	t.Logf("failing node left after %v, %d failed probes answered by then (interval %v)", time.Since(start), failed, interval)
	if failed < 2 {
		t.Errorf("the node left after %d failed probe", failed)
	}
	for i, f := range fs {
		got, err := f.Ask(time.Second)
		if err != nil || got == "n3" || (nodes[i] != "n3" && got != nodes[i]) {
			t.Errorf("flow %d: was %s, now %s (%v)", i, nodes[i], got, err)
		}
	}
	passed := n3.Passed.Load()
	n3.SetHealthy(true)
	err = netlab.Eventually(context.Background(), 5*time.Second, func() error {
		if !strings.Contains(listTable(t, lab), n3.Addr.String()) {
			return fmt.Errorf("n3 not back")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if good := n3.Passed.Load() - passed; good < 2 {
		t.Errorf("the node came back after %d good probe", good)
	}
}

// One address and port passing from one port's name to another's in one
// pass (a Gateway deleted and another given its freed pool address, as
// the upstream conformance suite does): the old port's dispatch entries
// go before the new one's are added, in the same batch, so the batch is
// not refused ("file exists") and the new name serves.
func TestDriverAddressMovesToAnotherName(t *testing.T) {
	lab := netlab.New(t, 2)
	lab.Echo(nodePort)
	d := newDriver(t, lab, Health{Kind: "none"})
	at := func(name string, n *netlab.Node) model.UDPService {
		u := wg(model.BalanceRoundRobin, n)
		u.Name, u.Binds = name, []model.Bind{{Addr: netlab.LBAddr, Port: lbPort}}
		return u
	}
	apply(t, d, at("udp_gw_a_one_51820", lab.Nodes[0]))
	apply(t, d, at("udp_gw_a_two_51820", lab.Nodes[1]))
	if node, err := lab.Dial(anyPort(0), listen).Ask(2 * time.Second); err != nil || node != "n2" {
		t.Errorf("the new name's port: %q, %v", node, err)
	}
	if got := listTable(t, lab); strings.Contains(got, "udp_gw_a_one_51820") {
		t.Errorf("the old name is still in the table:\n%s", got)
	}
}
