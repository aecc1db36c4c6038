// Package netlab builds, for tests, a small network out of network
// namespaces: a client, a load balancer, and nodes, joined by veth pairs
// created inside the namespaces (the host's own interfaces, sysctls and
// ruleset are never touched). Addresses come from documentation ranges:
// the client side is 192.0.2.0/24 (the load balancer is 192.0.2.1, the
// clients 192.0.2.2 and 192.0.2.10-29), node i is 198.51.100.(4i+2) on a
// /30 whose other end, 198.51.100.(4i+1), is the load balancer.
package netlab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/netnsrun"
)

// LBAddr is the load balancer's address on the client side.
var LBAddr = netip.MustParseAddr("192.0.2.1")

// Lab is the network. Namespaces are deleted when the test ends.
type Lab struct {
	t      testing.TB
	Client string // namespace names
	LB     string
	Nodes  []*Node
}

// Node is one node namespace.
type Node struct {
	Name    string // n1, n2, ...
	NS      string
	Addr    netip.Addr
	healthy atomic.Bool
	// Failed and Passed count the health answers given (503 and 200).
	Failed, Passed atomic.Int32
}

var seq atomic.Int32

// New builds a lab with n nodes, or skips the test when it cannot (not
// root, no `ip`).
func New(t testing.TB, n int) *Lab {
	t.Helper()
	p := prefix(t)
	l := &Lab{t: t, Client: p + "c", LB: p + "lb"}
	l.addNS(l.Client)
	l.addNS(l.LB)
	l.ip(l.LB, "link", "add", "c0", "type", "veth", "peer", "name", "eth0", "netns", l.Client)
	l.ip(l.LB, "addr", "add", "192.0.2.1/24", "dev", "c0")
	l.ip(l.LB, "link", "set", "c0", "up")
	l.ip(l.Client, "addr", "add", "192.0.2.2/24", "dev", "eth0")
	for i := 10; i < 30; i++ {
		l.ip(l.Client, "addr", "add", fmt.Sprintf("192.0.2.%d/24", i), "dev", "eth0")
	}
	l.ip(l.Client, "link", "set", "eth0", "up")
	l.ip(l.Client, "route", "add", "default", "via", "192.0.2.1")
	for i := 1; i <= n; i++ {
		nd := &Node{Name: fmt.Sprintf("n%d", i), NS: fmt.Sprintf("%sn%d", p, i),
			Addr: netip.MustParseAddr(fmt.Sprintf("198.51.100.%d", 4*i+2))}
		nd.healthy.Store(true)
		l.addNS(nd.NS)
		dev := fmt.Sprintf("n%d", i)
		l.ip(l.LB, "link", "add", dev, "type", "veth", "peer", "name", "eth0", "netns", nd.NS)
		l.ip(l.LB, "addr", "add", fmt.Sprintf("198.51.100.%d/30", 4*i+1), "dev", dev)
		l.ip(l.LB, "link", "set", dev, "up")
		l.ip(nd.NS, "addr", "add", nd.Addr.String()+"/30", "dev", "eth0")
		l.ip(nd.NS, "link", "set", "eth0", "up")
		l.ip(nd.NS, "route", "add", "default", "via", fmt.Sprintf("198.51.100.%d", 4*i+1))
		l.Nodes = append(l.Nodes, nd)
	}
	return l
}

// prefix is a new prefix for a test's namespace names, or skips the test
// when it cannot make namespaces (not root, no `ip`).
func prefix(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip command (iproute2)")
	}
	return fmt.Sprintf("hks%d-%d-", os.Getpid()%100000, seq.Add(1))
}

func (l *Lab) addNS(name string) {
	l.t.Helper()
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		l.t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	l.t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	l.ip(name, "link", "set", "lo", "up")
}

func (l *Lab) ip(ns string, args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip -n %s %s: %v: %s", ns, strings.Join(args, " "), err, out)
	}
}

// Path is the file of a namespace, for setns.
func Path(ns string) string { return "/run/netns/" + ns }

// Exec runs a command inside a namespace and returns its output.
func (l *Lab) Exec(ns string, args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
	return string(out), err
}

// Do runs fn on an OS thread inside the namespace (netnsrun.Do): sockets
// opened there stay in it.
func Do(ns string, fn func() error) error {
	h, err := netns.GetFromName(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	return netnsrun.Do(h, fn)
}

// Echo runs a UDP server on port in every node that answers each
// datagram with "<node name> <datagram>", until the test ends.
func (l *Lab) Echo(port uint16) {
	for _, n := range l.Nodes {
		var pc net.PacketConn
		err := Do(n.NS, func() (err error) {
			pc, err = net.ListenPacket("udp", netip.AddrPortFrom(n.Addr, port).String())
			return err
		})
		if err != nil {
			l.t.Fatal(err)
		}
		l.t.Cleanup(func() { pc.Close() })
		go func() {
			buf := make([]byte, 2048)
			for {
				k, from, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				_, _ = pc.WriteTo(append([]byte(n.Name+" "), buf[:k]...), from)
			}
		}()
	}
}

// Health serves GET /healthz on port in every node: 200 while the node is
// healthy (SetHealthy), 503 otherwise; like kube-proxy's.
func (l *Lab) Health(port uint16) {
	for _, n := range l.Nodes {
		var ln net.Listener
		err := Do(n.NS, func() (err error) {
			ln, err = net.Listen("tcp", netip.AddrPortFrom(n.Addr, port).String())
			return err
		})
		if err != nil {
			l.t.Fatal(err)
		}
		srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/healthz" || !n.healthy.Load() {
				n.Failed.Add(1)
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			n.Passed.Add(1)
			w.WriteHeader(http.StatusOK)
		})}
		go func() { _ = srv.Serve(ln) }()
		l.t.Cleanup(func() { srv.Close() })
	}
}

// SetHealthy changes what the node's health endpoint answers.
func (n *Node) SetHealthy(ok bool) { n.healthy.Store(ok) }

// Flow is a client socket with a fixed source address and port: one
// conntrack flow through the load balancer.
type Flow struct {
	c *net.UDPConn
}

// Dial opens a flow from the client namespace, from src (an address of
// the client, port 0: any) to dst.
func (l *Lab) Dial(src netip.AddrPort, dst netip.AddrPort) *Flow {
	l.t.Helper()
	var c *net.UDPConn
	err := Do(l.Client, func() (err error) {
		c, err = net.DialUDP("udp", net.UDPAddrFromAddrPort(src), net.UDPAddrFromAddrPort(dst))
		return err
	})
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() { c.Close() })
	return &Flow{c}
}

// Ask sends a datagram and returns the node that answered, or an error
// after timeout. Like any UDP client it sends again while no answer comes
// (every quarter of the timeout, at most 250ms apart): one datagram may be
// lost without anything being wrong, say a reply that crossed the deletion
// of its conntrack entry when a node briefly failed a probe on a loaded
// machine. Every try is on the same socket, so the same flow.
func (f *Flow) Ask(timeout time.Duration) (string, error) {
	msg := fmt.Sprint(time.Now().UnixNano())
	deadline := time.Now().Add(timeout)
	every := min(timeout/4, 250*time.Millisecond)
	buf := make([]byte, 2048)
	for {
		if _, err := f.c.Write([]byte(msg)); err != nil {
			return "", err
		}
		next := time.Now().Add(every)
		if next.After(deadline) {
			next = deadline
		}
		_ = f.c.SetReadDeadline(next)
		for {
			k, err := f.c.Read(buf)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() && time.Now().Before(deadline) {
					break // send again
				}
				return "", err
			}
			node, body, _ := strings.Cut(string(buf[:k]), " ")
			if body == msg {
				return node, nil
			}
		}
	}
}

// Eventually polls fn until it returns nil or the deadline passes.
func Eventually(ctx context.Context, timeout time.Duration, fn func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := fn()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// NFTAccepts fails t unless `nft -c -f` accepts ruleset, checked inside a
// network namespace of its own (nft -c still asks the kernel); it skips
// the test when nft is not installed (make deps installs it).
func NFTAccepts(t testing.TB, ruleset []byte) {
	t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("no nft command (apt-get install nftables; make deps)")
	}
	l := New(t, 0)
	cmd := exec.Command("ip", "netns", "exec", l.LB, "nft", "-c", "-f", "-")
	cmd.Stdin = strings.NewReader(string(ruleset))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft -c -f rejects the ruleset: %v\n%s\n%s", err, out, ruleset)
	}
}

// UDPFlowsTo counts the UDP conntrack entries of namespace ns whose reply
// comes from a (flows DNATed to a server at a).
func UDPFlowsTo(ns string, a netip.Addr) (int, error) {
	h, err := netns.GetFromName(ns)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	nl, err := netlink.NewHandleAt(h, unix.NETLINK_NETFILTER)
	if err != nil {
		return 0, err
	}
	defer nl.Close()
	flows, err := nl.ConntrackTableList(netlink.ConntrackTable, unix.AF_INET)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range flows {
		if r, ok := netip.AddrFromSlice(f.Reverse.SrcIP); ok && r.Unmap() == a && f.Forward.Protocol == unix.IPPROTO_UDP {
			n++
		}
	}
	return n, nil
}

// ListTable is `nft list table inet NAME` in namespace ns.
func (l *Lab) ListTable(ns, name string) (string, error) {
	out, err := l.Exec(ns, "nft", "list", "table", "inet", name)
	if err != nil {
		return "", fmt.Errorf("nft list table: %w: %s", err, out)
	}
	return out, nil
}
