package layer2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// TestFailover: on a segment of three load-balancer hosts and a client,
// one host holds each address, the client reaches it there, and when the
// owner is frozen or turns unhealthy another host answers for the
// address (one trial each; `make failover` runs many and prints the
// times). The address carries a lifetime, so the address of an agent
// that died lapses.
func TestFailover(t *testing.T) {
	g := newGroup(t, Config{})
	owner, err := g.steady(vip4, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ip", "-n", g.host(owner).NS, "addr", "show", "dev", "eth0").CombinedOutput()
	if err != nil {
		t.Fatal(err, string(out))
	}
	if !strings.Contains(string(out), vip4.String()+"/32") || strings.Contains(vipLine(string(out)), "forever") {
		t.Fatalf("%s on %s without a lifetime:\n%s", vip4, owner, out)
	}
	cases := []struct {
		vip   netip.Addr
		fault string
	}{{vip4, "frozen"}, {vip4, "unhealthy"}, {vip4, "killed"}, {vip6, "frozen"}}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%s", tc.fault, tc.vip), func(t *testing.T) {
			took, err := g.failover(tc.vip, g.faults()[tc.fault])
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("failover %s", took)
		})
	}
}

// vipLine is the lifetime line following the virtual address in `ip
// addr show`.
func vipLine(out string) string {
	_, after, ok := strings.Cut(out, vip4.String()+"/32")
	if !ok {
		return ""
	}
	lines := strings.SplitN(after, "\n", 3)
	if len(lines) < 2 {
		return ""
	}
	return lines[1]
}

// BenchmarkFailover is `make failover`: HKS_FAILOVER_TRIALS (default 20)
// trials of each fault and family, from the fault to the first new TCP
// connection answered by another host (one tried every 10 ms), for our
// announcer and keepalived (with its default advert and with VRRPv3
// adverts every 100 ms) in the same harness, printed as a table
// (BENCHMARKS.md). Ours runs twice: its health gate set by the test
// (the faults frozen, unhealthy and killed: the agent), and the real
// health gate asking a real HAProxy on each host (newGatedGroup: the
// owner's HAProxy killed). HKS_FAILOVER_ONLY=ours (both of ours),
// gate (the second alone) or keepalived runs those; HKS_FAILOVER_FAULTS
// (a comma-separated list, say frozen) only those faults.
func BenchmarkFailover(b *testing.B) {
	trials := 20
	if v, err := strconv.Atoi(os.Getenv("HKS_FAILOVER_TRIALS")); err == nil && v > 0 {
		trials = v
	}
	type announcer struct {
		name string
		make func(b *testing.B) *group
	}
	all := []announcer{
		{"haproxy-k8s-sync l2, heartbeat 100 ms x 3", func(b *testing.B) *group { return newGroup(b, Config{}) }},
		{"haproxy-k8s-sync l2, heartbeat 100 ms x 3, the real health gate", func(b *testing.B) *group { return newGatedGroup(b) }},
		{keepalived{advert: "1", version: 2}.String(), func(b *testing.B) *group { return newKeepalived(b, keepalived{advert: "1", version: 2}) }},
		{keepalived{advert: "0.1", version: 3}.String(), func(b *testing.B) *group { return newKeepalived(b, keepalived{advert: "0.1", version: 3}) }},
	}
	only := os.Getenv("HKS_FAILOVER_ONLY")
	faults := strings.Split(os.Getenv("HKS_FAILOVER_FAULTS"), ",")
	load := func() string {
		b, _ := os.ReadFile("/proc/loadavg")
		return strings.Join(strings.Fields(string(b))[:3], " ")
	}
	fmt.Println("load average at the start:", load())
	defer func() { fmt.Println("load average at the end:", load()) }()
	rows := []string{netlab.Row("announcer", "fault", "family", "trials", "p50", "p95", "max"), netlab.Row("---", "---", "---", "---", "---", "---", "---")}
	for _, an := range all {
		if only == "ours" && !strings.HasPrefix(an.name, "haproxy") || only == "keepalived" && !strings.HasPrefix(an.name, "keepalived") ||
			only == "gate" && !strings.HasSuffix(an.name, "health gate") {
			continue
		}
		b.Run(strings.Fields(an.name)[0], func(b *testing.B) {
			g := an.make(b)
			for _, fault := range []string{"frozen", "unhealthy", "killed", "haproxy killed"} {
				if g.faults()[fault] == nil || faults[0] != "" && !slices.Contains(faults, fault) {
					continue
				}
				for _, vip := range []netip.Addr{vip4, vip6} {
					var ds []time.Duration
					for range trials {
						d, err := g.failover(vip, g.faults()[fault])
						if err != nil {
							b.Fatal(err)
						}
						ds = append(ds, d)
					}
					p50, p95, worst := netlab.Percentiles(ds)
					fam := "IPv4 (ARP)"
					if vip.Is6() {
						fam = "IPv6 (NDP)"
					}
					rows = append(rows, netlab.Row(an.name, fault, fam, strconv.Itoa(trials), netlab.Ms(p50), netlab.Ms(p95), netlab.Ms(worst)))
				}
			}
		})
	}
	fmt.Println(strings.Join(rows, "\n"))
}

// TestForgedOnTheWire: heartbeats sent from the client to every host,
// signed with another key or without one, claiming the address with more
// support than any host could have, move nothing.
func TestForgedOnTheWire(t *testing.T) {
	g := newGroup(t, Config{Misses: 10}) // a hold of 1 s: no move for a loaded machine's late heartbeat
	owner, err := g.steady(vip4, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	forged := announce.Heartbeat{Host: "lb9", Epoch: 1, Seq: 1, Healthy: true,
		Claims: []announce.Claim{{Addr: vip4, Hold: announce.Hold{Term: 1 << 40, Support: 99}}}}
	wrongKey, err := announce.Seal(forged, []byte("a guess"))
	if err != nil {
		t.Fatal(err)
	}
	as := forged
	as.Host = otherThan(g, owner)
	wrongKeyAs, _ := announce.Seal(as, []byte("a guess"))
	err = netlab.Do(g.client.NS, func() error {
		c, err := net.ListenUDP("udp", nil)
		if err != nil {
			return err
		}
		defer c.Close()
		for range 20 {
			for _, h := range g.lbs {
				for _, b := range [][]byte{wrongKey, wrongKeyAs, []byte("HKA1{}")} {
					if _, err := c.WriteToUDPAddrPort(b, netip.AddrPortFrom(h.Addr, DefaultPort)); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// a few heartbeats later the owner is the same and still answers
	deadline := time.Now().Add(5 * DefaultInterval)
	for time.Now().Before(deadline) {
		if hs := g.holders(vip4); len(hs) != 1 || hs[0] != owner {
			t.Fatalf("%s held by %v after forged heartbeats, was %s", vip4, hs, owner)
		}
	}
	if name, err := g.ask(vip4, time.Second); err != nil || name != owner {
		t.Fatalf("answered by %q (%v), want %s", name, err, owner)
	}
}

func otherThan(g *group, name string) string {
	for _, h := range g.lbs {
		if h.Name != name {
			return h.Name
		}
	}
	return ""
}

func TestNewErrors(t *testing.T) {
	if _, err := New(Config{Interface: "eth0", Key: []byte("k")}); err == nil {
		t.Fatal("no host name: no error")
	}
	// only looked up, in the test's own namespace: nothing is changed
	_, err := New(Config{ID: "lb1", Interface: "hks-no-such-if0", Key: []byte("k")})
	if !errors.Is(err, ErrNoInterface) {
		t.Fatalf("%v, want ErrNoInterface", err)
	}
}

// TestHostsOwnAddressesLeftAlone: an address that is a host's own (bound
// by --bind-address, say) is never taken, moved or dropped: not by the
// host that has it, not by the others.
func TestHostsOwnAddressesLeftAlone(t *testing.T) {
	own := netip.MustParseAddr("192.0.2.1") // lb1's (netlab.NewSegment)
	g := newGroup(t, Config{}, own)
	if _, err := g.steady(vip4, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if hs := g.holders(own); len(hs) != 0 {
		t.Fatalf("%s held by %v", own, hs)
	}
	for _, h := range g.lbs {
		out, err := exec.Command("ip", "-n", h.NS, "-br", "addr", "show", "dev", "eth0").CombinedOutput()
		if err != nil {
			t.Fatal(err, string(out))
		}
		if has := strings.Contains(string(out), " "+own.String()+"/"); has != (h.Name == "lb1") {
			t.Fatalf("%s on %s: %v\n%s", own, h.Name, has, out)
		}
	}
}

// TestLinkDown: a host whose link loses its carrier lets its addresses
// go (it does not keep them on a dead link), another host takes them,
// and nothing moves back when the link returns.
func TestLinkDown(t *testing.T) {
	g := newGroup(t, Config{})
	owner, err := g.steady(vip4, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	link := func(state string) {
		t.Helper()
		if out, err := exec.Command("ip", "-n", g.host(owner).NS, "link", "set", "eth0", state).CombinedOutput(); err != nil {
			t.Fatal(err, string(out))
		}
	}
	link("down")
	err = netlab.Eventually(context.Background(), 10*time.Second, func() error {
		if hs := g.holders(vip4); len(hs) != 1 || hs[0] == owner {
			return fmt.Errorf("%s held by %v, %s's link down", vip4, hs, owner)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	link("up")
	now, err := g.steady(vip4, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if now == owner {
		t.Fatalf("%s moved back to %s when its link returned", vip4, owner)
	}
}

// BenchmarkFailoverDeafClient is a client that ignores gratuitous ARP (as
// some switches and routers do, metallb #2910): the client's namespace
// drops every ARP packet whose sender and target are the address, so it
// finds the new owner only through its own neighbour probing (the
// kernel's defaults: reachable 15-45 s, then 5 s delay and 3 probes).
// HKS_FAILOVER_TRIALS trials (default 3) of a frozen owner:
//
//	go test -run '^$' -bench BenchmarkFailoverDeafClient -benchtime 1x ./internal/announce/layer2/
func BenchmarkFailoverDeafClient(b *testing.B) {
	trials := 3
	if v, err := strconv.Atoi(os.Getenv("HKS_FAILOVER_TRIALS")); err == nil && v > 0 {
		trials = v
	}
	g := newGroup(b, Config{})
	g.window = 2 * time.Minute
	rules := fmt.Sprintf("table arp deaf {\n chain in {\n  type filter hook input priority 0; policy accept;\n"+
		"  arp saddr ip %s arp daddr ip %s drop\n }\n}\n", vip4, vip4)
	cmd := exec.Command("ip", "netns", "exec", g.client.NS, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("nft: %v: %s", err, out)
	}
	var ds []time.Duration
	for range trials {
		d, err := g.failover(vip4, g.faults()["frozen"])
		if err != nil {
			b.Fatal(err)
		}
		ds = append(ds, d)
	}
	p50, p95, worst := netlab.Percentiles(ds)
	fmt.Println(netlab.Row("haproxy-k8s-sync l2, a client ignoring gratuitous ARP", "frozen", "IPv4 (ARP)", strconv.Itoa(trials), netlab.Ms(p50), netlab.Ms(p95), netlab.Ms(worst)))
}
