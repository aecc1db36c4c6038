package bgp

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// TestRouterECMPConnections: three hosts as equal paths at BIRD, 90
// connections from a client behind the router, forwarded by it (spread
// by port); one
// host withdraws (its gate fails) and comes back. The connections that
// ended on the host that left get a reset, never a hang (each errors
// within 2 s, and not by its deadline). Of the other hosts'
// connections, each time:
//
//   - with BIRD's multipath route (hash-threshold: no resilient next-hop
//     group; BIRD 2.0 installs multipath routes, not next-hop objects)
//     a fraction is lost (the kernel moves some of their flows to
//     another host, which resets them; about 1/4 on a leave of one of
//     three and 1/2 on its join): reported;
//   - with a resilient next-hop group (the router's kernel route
//     programmed by the test from the paths BIRD holds, as a router with
//     that feature does), none is lost.
func TestRouterECMPConnections(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resilient bool
	}{{"multipath route", false}, {"resilient group", true}} {
		t.Run(tc.name, func(t *testing.T) { ecmpConnections(t, tc.resilient) })
	}
}

func ecmpConnections(t *testing.T, resilient bool) {
	const n = 90
	l := newLab(t, 3, birdOpts{noKernel: resilient})
	w := announce.Want{Addrs: []netip.Addr{vip4}, Healthy: true}
	for _, h := range l.lbs {
		l.start(h, speakerFile{Config: Config{RestartTime: 30 * time.Second}}, w)
		netlab.ServeEcho(t, h, echoPort)
	}
	lb1, lb2, lb3 := l.lbs[0], l.lbs[1], l.lbs[2]
	client := l.clientBehind(t)
	// paths waits until BIRD holds a's paths via exactly hosts and the
	// router's kernel forwards over them
	paths := func(hosts ...*netlab.Host) {
		t.Helper()
		if !resilient {
			if err := l.waitNexthops(vip4, 15*time.Second, hosts...); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := l.waitRoutes(vip4, 15*time.Second, hosts...); err != nil {
			t.Fatal(err)
		}
		if err := l.resilientRoute(vip4, hosts...); err != nil {
			t.Fatal(err)
		}
	}
	paths(lb1, lb2, lb3)
	var conns []*kept
	t.Cleanup(func() {
		for _, c := range conns {
			c.c.Close()
		}
	})
	// connect opens n connections; by is how many each host took
	connect := func() (by map[string]int) {
		t.Helper()
		by = map[string]int{}
		conns = conns[:0]
		for range n {
			c, err := keepConnFrom(client, vip4)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			by[c.host]++
		}
		return by
	}
	// lost is how many of conns no longer echo, among those on the hosts
	// other than left (and of those, how many) and on left; a lost
	// connection of left must have been reset, not timed out
	lost := func(left string) (stayLost, stay, leftLost int) {
		t.Helper()
		for _, c := range conns {
			err := c.alive()
			switch {
			case c.host == left && err == nil:
			case c.host == left:
				leftLost++
				if errors.Is(err, os.ErrDeadlineExceeded) {
					t.Errorf("a connection of %s hung (%v), want a reset", left, err)
				}
			default:
				stay++
				if err != nil {
					stayLost++
				}
			}
		}
		return
	}
	by := connect()
	if len(by) != 3 {
		t.Fatalf("connections spread over %v, want all three hosts", by)
	}
	// lb3 leaves
	w.Healthy = false
	l.set(lb3, w)
	paths(lb1, lb2)
	stayLost, stay, leftLost := lost(lb3.Name)
	t.Logf("lb3 left ECMP: %d of %d connections of the hosts that stayed lost (%.0f%%); %d of its %d reset (on %v)",
		stayLost, stay, 100*float64(stayLost)/float64(stay), leftLost, by[lb3.Name], by)
	if leftLost != by[lb3.Name] {
		t.Errorf("%d of lb3's %d connections still echo through another host", by[lb3.Name]-leftLost, by[lb3.Name])
	}
	if resilient && stayLost > 0 {
		t.Errorf("with a resilient group %d connections of the hosts that stayed were lost, want 0", stayLost)
	}
	// the survivors, anew, and lb3 back
	by = connect()
	w.Healthy = true
	l.set(lb3, w)
	paths(lb1, lb2, lb3)
	stayLost, stay, _ = lost(lb3.Name)
	t.Logf("lb3 joined ECMP: %d of %d established connections lost (%.0f%%) (on %v)", stayLost, stay, 100*float64(stayLost)/float64(stay), by)
	if resilient && stayLost > 0 {
		t.Errorf("with a resilient group %d established connections were lost when lb3 joined, want 0", stayLost)
	}
}

// resilientRoute points the router's kernel route for a at a resilient
// next-hop group of the hosts given (next hop i+1 is host lbs[i], the
// group id 100), created or replaced.
func (l *lab) resilientRoute(a netip.Addr, hosts ...*netlab.Host) error {
	ip := func(args ...string) error {
		out, err := exec.Command("ip", append([]string{"-n", l.router.NS}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	first := ip("nexthop", "show", "id", "100") != nil
	var ids []string
	for i, h := range l.lbs {
		id := fmt.Sprint(i + 1)
		if first {
			if err := ip("nexthop", "add", "id", id, "via", l.hostAddr(h).String(), "dev", "eth0"); err != nil {
				return err
			}
		}
		for _, x := range hosts {
			if x == h {
				ids = append(ids, id)
			}
		}
	}
	if !first {
		// the group's members changed in place: the buckets of the
		// next hops that stay keep them
		return ip("nexthop", "replace", "id", "100", "group", strings.Join(ids, "/"), "type", "resilient", "buckets", "64")
	}
	if err := ip("nexthop", "add", "id", "100", "group", strings.Join(ids, "/"), "type", "resilient", "buckets", "64"); err != nil {
		return err
	}
	return ip("route", "add", netip.PrefixFrom(a, a.BitLen()).String(), "nhid", "100")
}

// clientBehind makes a namespace of its own behind the router (a veth
// pair, 198.18.0.0/24: the router .1, the client .2), the router
// forwarding, the hosts routing the client's network back through the
// router; it returns the client's namespace. Connections the router
// makes itself are no measure of its forwarding: each change of its
// routes makes its own sockets look their route up again and pick a
// next hop anew (measured: the same resilient group replaced, members
// unchanged, lost 41 of 60 of the router's own connections; and with
// the router as the client the multipath rows lost about half on a
// leave and two thirds on a join, a next hop drawn anew).
func (l *lab) clientBehind(t *testing.T) string {
	t.Helper()
	ns := fmt.Sprintf("hks-c%d", time.Now().UnixNano()%1e9)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	run("-n", l.router.NS, "link", "add", "eth1", "type", "veth", "peer", "name", "eth0", "netns", ns)
	run("-n", l.router.NS, "addr", "add", "198.18.0.1/24", "dev", "eth1")
	run("-n", l.router.NS, "link", "set", "eth1", "up")
	run("-n", ns, "addr", "add", "198.18.0.2/24", "dev", "eth0")
	run("-n", ns, "link", "set", "eth0", "up")
	run("-n", ns, "link", "set", "lo", "up")
	run("-n", ns, "route", "add", "default", "via", "198.18.0.1")
	l.seg.Sysctl(l.router, "net.ipv4.ip_forward", "1")
	for _, h := range l.lbs {
		run("-n", h.NS, "route", "add", "198.18.0.0/24", "via", l.router.Addr.String())
	}
	return ns
}
