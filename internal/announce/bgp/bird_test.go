package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// birdConfig: the router in AS routerASN, a passive eBGP session to each
// host (the hosts connect) over IPv4, or over IPv6 with o.ipv6 (carrying
// the IPv4 routes too with o.v4over6: BIRD's extended next hop), every
// route learned taken, equal ones merged into one multipath route in the
// namespace's kernel tables.
func (l *lab) birdConfig(o birdOpts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "router id %s;\nlog stderr all;\nprotocol device {}\n", l.router.Addr)
	export4 := "all"
	if o.noKernel {
		export4 = "none" // the test programs the router's kernel itself
	}
	fmt.Fprintf(&b, "protocol kernel { debug { routes }; ipv4 { export %s; }; merge paths on; }\n", export4)
	b.WriteString("protocol kernel { ipv6 { export all; }; merge paths on; }\n")
	if o.bfd > 0 {
		ms := o.bfd.Milliseconds()
		fmt.Fprintf(&b, "protocol bfd { debug { states, events }; interface \"eth0\" { min rx interval %d ms; min tx interval %d ms; idle tx interval %d ms; multiplier 3; }; }\n", ms, ms, ms)
	}
	// error wait time: a host that failed is taken back after 1 s, not
	// BIRD's 60 s (its return is not what the tests time)
	b.WriteString("template bgp lbs {\n debug { states, events };\n local as 65000;\n passive on;\n graceful restart on;\n error wait time 1, 5;\n")
	switch {
	case !o.ipv6:
		b.WriteString(" ipv4 { import all; export none; };\n")
	case o.v4over6:
		b.WriteString(" ipv6 { import all; export none; };\n ipv4 { import all; export none; extended next hop on; };\n")
	default:
		b.WriteString(" ipv6 { import all; export none; };\n")
	}
	if o.password != "" {
		fmt.Fprintf(&b, " password %q;\n", o.password)
	}
	if o.bfd > 0 {
		b.WriteString(" bfd on;\n")
	}
	b.WriteString("}\n")
	for _, h := range l.lbs {
		fmt.Fprintf(&b, "protocol bgp %s from lbs { neighbor %s as %d; }\n", h.Name, l.hostAddr(h), hostASN)
	}
	return b.String()
}

// birdc asks the router's BIRD.
func (l *lab) birdc(args ...string) (string, error) {
	out, err := exec.Command("/usr/sbin/birdc", append([]string{"-s", l.sock}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("birdc %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// route is one path the router learned for an address.
type route struct {
	via  netip.Addr
	best bool
}

// routes are the paths the router's BIRD holds for a (its `show route`).
func (l *lab) routes(a netip.Addr) ([]route, error) {
	table := "master4"
	if a.Is6() {
		table = "master6"
	}
	out, err := l.birdc("show", "route", "for", a.String(), "table", table)
	if strings.Contains(out, "Network not found") {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rs []route
	best := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case strings.Contains(line, "unicast ["):
			best = strings.Contains(line, " * ")
		case len(f) >= 2 && f[0] == "via":
			v, err := netip.ParseAddr(f[1])
			if err != nil {
				return nil, fmt.Errorf("%q: %v", line, err)
			}
			rs = append(rs, route{via: v, best: best})
		}
	}
	return rs, nil
}

// kernelRemovals counts the times the router's BIRD took a's route out
// of its kernel table (its kernel protocol's "removed" lines): each one
// is a moment when the router had no route for a, and its traffic to a
// went nowhere.
func (l *lab) kernelRemovals(a netip.Addr) (int, error) {
	b, err := os.ReadFile(l.bird.LogPath)
	if err != nil {
		return 0, err
	}
	return strings.Count(string(b), "< removed "+netip.PrefixFrom(a, a.BitLen()).String()+" "), nil
}

// nexthops are the next hops of a's route in the router's kernel table
// (what its traffic takes; an IPv4 route via IPv6 reads `via inet6`).
func (l *lab) nexthops(a netip.Addr) ([]netip.Addr, error) {
	family := "-4"
	if a.Is6() {
		family = "-6"
	}
	out, err := exec.Command("ip", family, "-n", l.router.NS, "route", "show", netip.PrefixFrom(a, a.BitLen()).String()).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ip route: %v: %s", err, out)
	}
	var hops []netip.Addr
	f := strings.Fields(string(out))
	for i := 0; i+1 < len(f); i++ {
		if f[i] != "via" {
			continue
		}
		v := f[i+1]
		if (v == "inet6" || v == "inet") && i+2 < len(f) {
			v = f[i+2]
		}
		if a, err := netip.ParseAddr(v); err == nil {
			hops = append(hops, a)
		}
	}
	return hops, nil
}

// hostAddr is h's address on the router's sessions (its IPv6 one in
// a lab of IPv6 sessions), the next hop of its routes.
func (l *lab) hostAddr(h *netlab.Host) netip.Addr {
	if l.opts.ipv6 {
		return h.Addr6
	}
	return h.Addr
}

// routerAddr is the router's address on its sessions.
func (l *lab) routerAddr() netip.Addr {
	if l.opts.ipv6 {
		return l.router.Addr6
	}
	return l.router.Addr
}

// bfdUp polls until the router's BFD session with every host is Up.
func (l *lab) bfdUp(timeout time.Duration) error {
	return netlab.Eventually(context.Background(), timeout, l.bfdUpNow)
}

func (l *lab) bfdUpNow() error {
	out, err := l.birdc("show", "bfd", "sessions")
	if err != nil || strings.Count(out, " Up ") != len(l.lbs) {
		return fmt.Errorf("BFD sessions not up: %v\n%s", err, out)
	}
	return nil
}

// freeze freezes h (undone when the test ends) and waits, up to bound,
// until the router's only path for a goes via rest; it returns the
// time that took.
func (l *lab) freeze(h *netlab.Host, a netip.Addr, bound time.Duration, rest ...*netlab.Host) (time.Duration, error) {
	start := time.Now()
	if err := l.seg.Freeze(h, true); err != nil {
		return 0, err
	}
	l.t.Cleanup(func() { _ = l.seg.Freeze(h, false) })
	if err := l.waitRoutes(a, bound, rest...); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
