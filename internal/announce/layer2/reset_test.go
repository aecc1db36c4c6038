package layer2

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// TestFailoverResetsConnections: a connection the client established to
// the address on its owner, when the owner is frozen or turns
// unhealthy, ends with a reset from the new owner (it knows no such
// connection) within 5 s of the fault, never a hang: the client's next
// retransmission after the move reaches the new owner.
func TestFailoverResetsConnections(t *testing.T) {
	const port = 8081
	g := newGroup(t, Config{})
	for _, h := range g.lbs {
		netlab.ServeEcho(t, h, port)
	}
	for _, fault := range []string{"frozen", "unhealthy"} {
		t.Run(fault, func(t *testing.T) {
			owner, c, r := g.echoOwner(t, vip4, port)
			defer c.Close()
			h := g.host(owner)
			start := time.Now()
			if err := g.faults()[fault](h, true); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = g.faults()[fault](h, false) }()
			if fault == "unhealthy" {
				// it lets go at once, but after Set returns: write after it did
				if err := netlab.Eventually(context.Background(), 2*time.Second, func() error {
					if hs := g.holders(vip4); slices.Contains(hs, owner) {
						return fmt.Errorf("%s still held by %v", vip4, hs)
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			_ = c.SetDeadline(start.Add(5 * time.Second))
			if _, err := c.Write([]byte("after the fault\n")); err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatal(err)
			}
			line, err := r.ReadString('\n')
			took := time.Since(start)
			switch {
			case errors.Is(err, syscall.ECONNRESET):
				t.Logf("%s: the connection was reset %s after the fault", fault, took.Round(time.Millisecond))
			case err == nil:
				t.Fatalf("%s: the connection lives on (%q): the address did not move", fault, line)
			default:
				t.Fatalf("%s: %v after %s, want a reset within 5 s; %s", fault, err, took.Round(time.Millisecond), g.wire(vip4, h))
			}
			if err := g.faults()[fault](h, false); err != nil {
				t.Fatal(err)
			}
			if _, err := g.steady(vip4, 30*time.Second); err != nil {
				t.Fatal(fmt.Errorf("after the fault was undone: %w", err))
			}
		})
	}
}

// wire is what the kernels say of vip's connections when a test fails:
// which hosts have vip on their interface, the client's neighbour entry
// for it, and the TCP connections to it on the client and on the old
// owner (unacknowledged data, retransmissions).
func (g *group) wire(vip netip.Addr, old *netlab.Host) string {
	out := fmt.Sprintf("%s on the interfaces of %v", vip, netlab.OnEth0(g.lbs, vip))
	run := func(ns string, args ...string) string {
		b, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Sprintf("%v: %v", args, err)
		}
		return strings.TrimSpace(string(b))
	}
	out += "; the client's neighbour: " + run(g.client.NS, "ip", "neigh", "show", vip.String())
	out += "\nthe client's connections:\n" + run(g.client.NS, "ss", "-tni", "dst", vip.String())
	out += fmt.Sprintf("\n%s's connections:\n", old.Name) + run(old.NS, "ss", "-tni", "src", vip.String())
	return out
}
