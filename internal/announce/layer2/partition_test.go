package layer2

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// TestPartitionHeals: lb1 and lb2 cut from each other at the switch,
// lb3 and the client hearing both (issue 31: two hosts partitioned from
// each other). The cut is watched for 3 s (ten hold times): no address
// has two holders at any poll, nothing moves (lb3's heartbeats name lb2
// to lb1 and lb1 to lb2: each knows the other alive, announce/hears.go),
// and every address is reached at its holder. Healed:
// within the hold time plus a margin every address has one holder, the
// client's neighbour entry names that holder's MAC and the holder
// answers; an established connection to an address whose holder did not
// change lives on.
func TestPartitionHeals(t *testing.T) {
	const port = 8083
	extra := []netip.Addr{netip.MustParseAddr("192.0.2.201"), netip.MustParseAddr("192.0.2.202")}
	v4s := append([]netip.Addr{vip4}, extra...)
	vips := append([]netip.Addr{vip6}, v4s...)
	g := newGroup(t, Config{}, extra...)
	for _, h := range g.lbs {
		netlab.ServeEcho(t, h, port)
	}
	owners := func() (map[netip.Addr]string, error) { return g.owners(vips) }
	if err := netlab.Eventually(context.Background(), 30*time.Second, func() error { _, err := owners(); return err }); err != nil {
		t.Fatal(err)
	}
	var conns []liveConn
	t.Cleanup(func() {
		for _, k := range conns {
			k.c.Close()
		}
	})
	for _, v := range v4s {
		owner, err := g.steady(v, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c, err := netlab.DialTCP(g.client.NS, netip.Addr{}, netip.AddrPortFrom(v, port))
		if err != nil {
			t.Fatal(err)
		}
		k := liveConn{vip: v, host: owner, c: c, r: bufio.NewReader(c)}
		conns = append(conns, k)
		if hello, err := k.r.ReadString('\n'); err != nil || strings.TrimSpace(hello) != owner {
			t.Fatalf("%s greeted %q (%v), held by %s", v, hello, err, owner)
		}
	}
	before, err := owners()
	if err != nil {
		t.Fatal(err)
	}
	lb1, lb2 := g.lbs[0], g.lbs[1]
	if err := g.seg.Partition(lb1, lb2, true); err != nil {
		t.Fatal(err)
	}
	cut := true
	defer func() {
		if cut {
			_ = g.seg.Partition(lb1, lb2, false)
		}
	}()
	// the cut, watched for ten hold times: one holder throughout, and
	// none of them moves
	start := time.Now()
	last := before
	for time.Since(start) < 3*time.Second {
		now := map[netip.Addr]string{}
		for _, v := range vips {
			hs := g.holders(v)
			now[v] = strings.Join(hs, "+")
			if now[v] != last[v] {
				t.Errorf("cut +%s: %s held by %q (was %q)", time.Since(start).Round(time.Millisecond), v, now[v], last[v])
			}
		}
		last = now
		time.Sleep(50 * time.Millisecond) // a poll's pace, not a synchronisation
	}
	// every address reached at its one holder
	during := map[netip.Addr]string{}
	for _, v := range vips {
		hs := g.holders(v)
		during[v] = strings.Join(hs, "+")
		if len(hs) != 1 {
			t.Errorf("during the cut: %s held by %v, want one holder", v, hs)
			continue
		}
		if !v.Is4() {
			continue
		}
		if err := netlab.Eventually(context.Background(), 2*time.Second, func() error {
			name, err := g.ask(v, 200*time.Millisecond)
			if err == nil && name != hs[0] {
				err = fmt.Errorf("answered by %s, held by %s", name, hs[0])
			}
			return err
		}); err != nil {
			t.Errorf("during the cut: %s: %v", v, err)
		}
	}
	t.Logf("during the cut: %v (before: %v)", during, before)
	cut = false
	if err := g.seg.Partition(lb1, lb2, false); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	// one heartbeat interval to hear each other, a hold time for a
	// contest to settle, and a margin for a loaded machine
	bound := DefaultInterval + time.Duration(DefaultMisses)*DefaultInterval + 2*time.Second
	var after map[netip.Addr]string
	err = netlab.Eventually(context.Background(), bound, func() error {
		var err error
		if after, err = owners(); err != nil {
			return err
		}
		for _, v := range v4s {
			name, err := g.ask(v, 200*time.Millisecond)
			if err != nil {
				return fmt.Errorf("%s: %w", v, err)
			}
			if name != after[v] {
				return fmt.Errorf("%s answered by %s, held by %s", v, name, after[v])
			}
			if mac, owned := neighMAC(g.client.NS, v), linkMAC(g.host(after[v]).NS); mac != owned {
				return fmt.Errorf("%s: the client's neighbour entry %q, its holder %s's MAC %q", v, mac, after[v], owned)
			}
		}
		return nil
	})
	took := time.Since(healed).Round(time.Millisecond)
	if err != nil {
		t.Fatalf("%s after the heal (bound %s): %v", took, bound, err)
	}
	t.Logf("healed: one holder per address, answering, %s after the heal: %v", took, after)
	kept, lost := 0, 0
	for _, k := range conns {
		if after[k.vip] != k.host {
			t.Logf("%s moved from %s to %s: its connection is not counted", k.vip, k.host, after[k.vip])
			continue
		}
		if err := k.echo(2 * time.Second); err != nil {
			lost++
			t.Errorf("the connection to %s on %s (held throughout): %v", k.vip, k.host, err)
		} else {
			kept++
		}
	}
	t.Logf("connections to an address that stayed on its host: %d kept, %d lost", kept, lost)
}

// linkMAC is the MAC address of eth0 in ns.
func linkMAC(ns string) string {
	out, _ := exec.Command("ip", "-n", ns, "-br", "link", "show", "dev", "eth0").Output()
	if f := strings.Fields(string(out)); len(f) >= 3 {
		return f[2]
	}
	return ""
}

// neighMAC is the link-layer address ns's neighbour table has for a.
func neighMAC(ns string, a netip.Addr) string {
	out, _ := exec.Command("ip", "-n", ns, "neigh", "show", a.String(), "dev", "eth0").Output()
	f := strings.Fields(string(out))
	for i := range f {
		if f[i] == "lladdr" && i+1 < len(f) {
			return f[i+1]
		}
	}
	return ""
}
