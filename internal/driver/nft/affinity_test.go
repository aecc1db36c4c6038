package nft

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// ClientIP affinity with a timeout: clients that came while one node
// served keep it when a second node arrives (new flows, each a new
// conntrack entry), while new clients spread; once their entries expired
// they are balanced again (some move); a node that leaves takes its
// clients' entries with it (they move at once, not after the timeout);
// a restarted driver reads it all back and sends nothing.
func TestDriverAffinityTimeout(t *testing.T) {
	lab := netlab.New(t, 2)
	lab.Echo(nodePort)
	for i := 40; i < 80; i++ { // 40 clients
		if out, err := lab.Exec(lab.Client, "ip", "addr", "add", fmt.Sprintf("192.0.2.%d/32", i), "dev", "eth0"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	d := newDriver(t, lab, Health{Kind: "none"})
	const timeout = 2 * time.Second
	aff := func(nodes ...*netlab.Node) model.UDPService {
		u := wg(model.BalanceSource, nodes...)
		u.Affinity = timeout
		return u
	}
	client := func(i int) netip.AddrPort {
		return netip.AddrPortFrom(netip.MustParseAddr(fmt.Sprintf("192.0.2.%d", 40+i)), 0)
	}
	ask := func(i int) string {
		t.Helper()
		_, nodes := flows(t, lab, 1, func(int) netip.AddrPort { return client(i) })
		return nodes[0]
	}
	const clients = 20
	apply(t, d, aff(lab.Nodes[0]))
	for i := range clients {
		if n := ask(i); n != "n1" {
			t.Fatalf("client %d reached %s with one node", i, n)
		}
	}
	apply(t, d, aff(lab.Nodes...))
	for i := range clients {
		for range 3 {
			if n := ask(i); n != "n1" {
				t.Fatalf("client %d moved to %s before its timeout", i, n)
			}
		}
	}
	others := map[string]int{}
	for i := clients; i < 2*clients; i++ {
		others[ask(i)]++
	}
	if others["n2"] == 0 {
		t.Errorf("new clients all reached %v", others)
	}

	// After the timeout the entries are gone, and the clients spread.
	ctx := context.Background()
	if err := netlab.Eventually(ctx, 10*timeout, func() error {
		els, err := d.elementsOf("udp_vpn_wg_51820" + suffixAff4)
		if err != nil {
			return err
		}
		for _, e := range els {
			if a, _ := netip.AddrFromSlice(e.Key); a.Compare(client(0).Addr()) >= 0 && a.Compare(client(clients-1).Addr()) <= 0 {
				return fmt.Errorf("%d entries left, %s among them", len(els), a)
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("entries did not expire: %v", err)
	}
	moved := 0
	for i := range clients {
		if ask(i) == "n2" {
			moved++
		}
	}
	if moved == 0 {
		t.Errorf("no client moved after its timeout")
	}

	// n1 leaves: its clients reach n2 at once.
	restarted := newDriver(t, lab, Health{Kind: "none"})
	apply(t, restarted, aff(lab.Nodes...))
	if n := batches(restarted); n != 0 {
		t.Errorf("a restarted driver sent %d batches for an unchanged model", n)
	}
	apply(t, restarted, aff(lab.Nodes[1]))
	for i := range clients {
		if n := ask(i); n != "n2" {
			t.Errorf("client %d reached %s, a node that left", i, n)
		}
	}
	// Affinity off: the maps and the record chain go.
	apply(t, restarted, wg(model.BalanceSource, lab.Nodes...))
	if got := listTable(t, lab); strings.Contains(got, suffixAff4) || strings.Contains(got, "udp_vpn_wg_51820"+suffixAffCh+" ") {
		t.Errorf("affinity left in the table:\n%s", got)
	}
}

// An affinity entry read for deletion may time out before the batch that
// deletes it arrives; the kernel then refuses the whole batch (ENOENT).
// The driver reads the table again and sends the rest: the node leaves,
// and its clients reach the other at once.
func TestAffinityEntryGoneBeforeBatch(t *testing.T) {
	lab := netlab.New(t, 2)
	lab.Echo(nodePort)
	aff := func(nodes ...*netlab.Node) model.UDPService {
		u := wg(model.BalanceSource, nodes...)
		u.Affinity = time.Hour
		return u
	}
	var expire atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d, err := New(ctx, Options{NetNS: netlab.Path(lab.LB), EnableForwarding: true, Health: Health{Kind: "none"}, onBatch: func() {
		if expire.CompareAndSwap(true, false) { // what a timeout does, between the read and the batch
			if out, err := lab.Exec(lab.LB, "nft", "flush", "map", "inet", Table, "udp_vpn_wg_51820"+suffixAff4); err != nil {
				t.Errorf("%v: %s", err, out)
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, d, aff(lab.Nodes[0]))
	if _, nodes := flows(t, lab, 1, func(int) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr("192.0.2.2"), 0) }); nodes[0] != "n1" {
		t.Fatalf("client reached %s with one node", nodes[0])
	}
	apply(t, d, aff(lab.Nodes...))
	els, err := d.elementsOf("udp_vpn_wg_51820" + suffixAff4)
	if err != nil || len(els) != 1 {
		t.Fatalf("affinity entries %v, %v: want the client's one", els, err)
	}
	expire.Store(true)
	apply(t, d, aff(lab.Nodes[1]))
	if expire.Load() {
		t.Fatal("no batch was sent")
	}
	if _, nodes := flows(t, lab, 1, func(int) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr("192.0.2.2"), 0) }); nodes[0] != "n2" {
		t.Errorf("client reached %s, a node that left", nodes[0])
	}
}
