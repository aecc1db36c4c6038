package layer2

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
				t.Fatalf("%s: %v after %s, want a reset within 5 s", fault, err, took.Round(time.Millisecond))
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
