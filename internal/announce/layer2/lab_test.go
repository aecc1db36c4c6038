package layer2

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// The virtual addresses the tests move, and the port the hosts serve.
var (
	vip4 = netip.MustParseAddr("192.0.2.200")
	vip6 = netip.MustParseAddr("2001:db8::200")
)

const servePort = 8080

// group is three load-balancer hosts and a client on one segment, the
// hosts running an announcer: ours, a process per host (newGroup,
// hostproc_test.go), or keepalived (newKeepalived, keepalived_test.go).
type group struct {
	t      testing.TB
	seg    *netlab.Segment
	lbs    []*netlab.Host
	client *netlab.Host
	// holders is who holds vip now; healthy sets a host's health gate
	holders func(vip netip.Addr) []string
	// view is who holds each address as the named host hears the group
	view func(name string) announce.Holders
	// holds is what the named host's announcer holds (an error when it
	// did not say within 5 s)
	holds   func(name string) ([]netip.Addr, error)
	healthy func(h *netlab.Host, ok bool) error
	// kill, when set, kills the host's announcer (on) or starts a new one
	kill func(h *netlab.Host, on bool) error
	// restart, when set, stops the host's announcer (as SIGTERM does) and
	// starts a new one, unhealthy for its first unhealthyFor
	restart func(h *netlab.Host, unhealthyFor time.Duration) error
	// pids, when set, are the processes of the hosts' announcers
	pids func() []int
	// movedAt, when set before startGroup, is told each move a host
	// heard and when it did (hostEvent.At)
	movedAt func(time.Time, announce.Move)
	// window: how long a trial waits for another host (default 15 s)
	window time.Duration
	// haproxies, when set, are the hosts' HAProxies by host name, each
	// serving servePort in front of its host's name (newGatedGroup)
	haproxies map[string]*haproxytest.Process
}

// newHosts builds the segment, the hosts' sysctls and their servers.
func newHosts(t testing.TB) *group {
	t.Helper()
	return newHostsWith(t, (*group).serve)
}

// newHostsWith is newHosts with serve putting each host's server up.
func newHostsWith(t testing.TB, serve func(g *group, h *netlab.Host)) *group {
	t.Helper()
	seg := netlab.NewSegment(t, "lb1", "lb2", "lb3", "client")
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("no nft command (the switch drops a frozen host's frames with it; make deps)")
	}
	g := &group{t: t, seg: seg, lbs: seg.Hosts[:3], client: seg.Hosts[3]}
	for _, h := range g.lbs {
		// the hosts answer ARP only for addresses on the interface asked,
		// from their own address (docs/addresses.md)
		seg.Sysctl(h, "net.ipv4.conf.all.arp_ignore", "1")
		seg.Sysctl(h, "net.ipv4.conf.all.arp_announce", "2")
		serve(g, h)
	}
	return g
}

// wanted is what every host serves.
var wanted = announce.Want{Addrs: []netip.Addr{vip4, vip6}, Healthy: true}

// serve answers every TCP connection to the port with the host's name.
func (g *group) serve(h *netlab.Host) { netlab.ServeName(g.t, h, servePort) }

// ask opens one TCP connection from the client to vip and returns the
// name of the host that answered.
func (g *group) ask(vip netip.Addr, timeout time.Duration) (string, error) {
	return netlab.AskName(g.client.NS, netip.AddrPortFrom(vip, servePort), timeout)
}

// steady waits until one host holds vip and the client reaches it there,
// and returns that host.
func (g *group) steady(vip netip.Addr, timeout time.Duration) (string, error) {
	var owner string
	// the client forgets the last owner's address: after a partition
	// heals keepalived's surviving master sends no gratuitous ARP, and a
	// stale entry pointing at the other host would be probed for tens of
	// seconds; the trials measure failover, not this
	if out, err := exec.Command("ip", "-n", g.client.NS, "neigh", "flush", "dev", "eth0").CombinedOutput(); err != nil {
		return "", fmt.Errorf("neigh flush: %v: %s", err, out)
	}
	err := netlab.Eventually(context.Background(), timeout, func() error {
		hs := g.holders(vip)
		if len(hs) != 1 {
			return fmt.Errorf("%s held by %v", vip, hs)
		}
		name, err := g.ask(vip, 200*time.Millisecond)
		if err != nil {
			return err
		}
		if name != hs[0] {
			return fmt.Errorf("%s held by %s, answered by %s", vip, hs[0], name)
		}
		owner = name
		return nil
	})
	return owner, err
}

// owners is the one holder of each of vips, or an error naming an
// address with none or several.
func (g *group) owners(vips []netip.Addr) (map[netip.Addr]string, error) {
	out := map[netip.Addr]string{}
	for _, v := range vips {
		hs := g.holders(v)
		if len(hs) != 1 {
			return nil, fmt.Errorf("%s held by %v", v, hs)
		}
		out[v] = hs[0]
	}
	return out, nil
}

func (g *group) host(name string) *netlab.Host {
	for _, h := range g.lbs {
		if h.Name == name {
			return h
		}
	}
	g.t.Fatalf("no host %s", name)
	return nil
}

// failover runs one trial: the fault on the owner of vip, then a new
// connection every 10 ms until one is answered by another host; it
// returns the time from the fault to that answer, and undoes the fault
// once the group is steady again.
func (g *group) failover(vip netip.Addr, fault func(h *netlab.Host, on bool) error) (time.Duration, error) {
	owner, err := g.steady(vip, 30*time.Second)
	if err != nil {
		return 0, err
	}
	h := g.host(owner)
	window := 15 * time.Second
	if g.window > 0 {
		window = g.window
	}
	undone := false
	defer func() {
		if !undone {
			_ = fault(h, false)
		}
	}()
	took, err := netlab.FirstAnswer(window, func() error { return fault(h, true) },
		func() (string, error) { return g.ask(vip, time.Second) }, func(name string) bool { return name != owner })
	if err != nil {
		return 0, fmt.Errorf("%s, the fault on %s: %w", vip, owner, err)
	}
	undone = true
	if err := fault(h, false); err != nil {
		return 0, err
	}
	_, err = g.steady(vip, 30*time.Second)
	return took, err
}

// faults the trials inject, by name.
func (g *group) faults() map[string]func(h *netlab.Host, on bool) error {
	if g.haproxies != nil {
		// behind the real health gate only HAProxy's own fault is the
		// gate's to see (newGatedGroup)
		return map[string]func(h *netlab.Host, on bool) error{"haproxy killed": g.killHAProxy}
	}
	return map[string]func(h *netlab.Host, on bool) error{
		// its link up, every frame to and from it dropped at the switch
		"frozen": func(h *netlab.Host, on bool) error { return g.seg.Freeze(h, on) },
		// its health gate fails (its HAProxy killed)
		"unhealthy": func(h *netlab.Host, on bool) error { return g.healthy(h, !on) },
		// its agent dies, leaving its addresses to lapse
		"killed": g.kill,
	}
}

// echoOwner waits until one host holds vip and the client reaches it,
// then opens a connection to the echo server on port there and reads
// its greeting (the owner's name); it fails the test otherwise.
func (g *group) echoOwner(t *testing.T, vip netip.Addr, port uint16) (string, net.Conn, *bufio.Reader) {
	t.Helper()
	owner, err := g.steady(vip, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c, err := netlab.DialTCP(g.client.NS, netip.Addr{}, netip.AddrPortFrom(vip, port))
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	if hello, err := r.ReadString('\n'); err != nil || strings.TrimSpace(hello) != owner {
		c.Close()
		t.Fatalf("greeted %q (%v), want %s", hello, err, owner)
	}
	return owner, c, r
}
