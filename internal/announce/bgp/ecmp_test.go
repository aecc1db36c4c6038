package bgp

import (
	"errors"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
)

// TestRouterECMPConnections: three hosts as equal paths at BIRD, 90
// connections established through the router's multipath route (spread
// by port); one host withdraws (its gate fails) and comes back. The
// connections that ended on the host that left get a reset, never a
// hang (each errors within 2 s, and not by its deadline); the fraction
// of the other hosts' connections lost each time is reported: the
// router's kernel (hash-threshold multipath, no resilient next-hop
// group: BIRD 2.0 installs multipath routes, not next-hop objects)
// moves some of their flows to another host, which resets them.
func TestRouterECMPConnections(t *testing.T) {
	const n = 90
	l := newLab(t, 3, birdOpts{})
	w := announce.Want{Addrs: []netip.Addr{vip4}, Healthy: true}
	for _, h := range l.lbs {
		l.start(h, speakerFile{Config: Config{RestartTime: 30 * time.Second}}, w)
		serveEcho(t, h)
	}
	lb1, lb2, lb3 := l.lbs[0], l.lbs[1], l.lbs[2]
	if err := l.waitNexthops(vip4, 15*time.Second, lb1, lb2, lb3); err != nil {
		t.Fatal(err)
	}
	conns := make([]*kept, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.c.Close()
		}
	})
	by := map[string]int{}
	for range n {
		c, err := keepConn(l, vip4)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		by[c.host]++
	}
	t.Logf("%d connections: %v", n, by)
	if len(by) != 3 {
		t.Fatalf("connections spread over %v, want all three hosts", by)
	}
	// lost is how many of conns no longer echo, among those on the hosts
	// that stay (and of those, how many) and on the one that left; a lost
	// connection of the host that left must have been reset, not timed
	// out
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
	// lb3 leaves
	w.Healthy = false
	l.set(lb3, w)
	if err := l.waitNexthops(vip4, 5*time.Second, lb1, lb2); err != nil {
		t.Fatal(err)
	}
	stayLost, stay, leftLost := lost(lb3.Name)
	t.Logf("lb3 left ECMP: %d of %d connections of the hosts that stayed lost (%.0f%%); %d of its %d reset", stayLost, stay, 100*float64(stayLost)/float64(stay), leftLost, by[lb3.Name])
	if leftLost != by[lb3.Name] {
		t.Errorf("%d of lb3's %d connections still echo through another host", by[lb3.Name]-leftLost, by[lb3.Name])
	}
	// the survivors, anew, and lb3 back
	conns = conns[:0]
	by = map[string]int{}
	for range n {
		c, err := keepConn(l, vip4)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		by[c.host]++
	}
	w.Healthy = true
	l.set(lb3, w)
	if err := l.waitNexthops(vip4, 10*time.Second, lb1, lb2, lb3); err != nil {
		t.Fatal(err)
	}
	stayLost, stay, _ = lost(lb3.Name)
	t.Logf("lb3 joined ECMP: %d of %d established connections lost (%.0f%%) (on %v)", stayLost, stay, 100*float64(stayLost)/float64(stay), by)
}
