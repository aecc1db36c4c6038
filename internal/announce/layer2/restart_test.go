package layer2

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// TestRestartKeepsAddresses: the owner's controller restarts (stopped
// as SIGTERM does, a new run started, its health gate passing a second
// later): with a restart time its addresses stay on its interface and
// nothing moves; a connection the client holds to the address lives on
// across the restart. Without one (the control), the stop lets them go,
// another host takes them and the connection is reset.
func TestRestartKeepsAddresses(t *testing.T) {
	const port = 8082
	cases := []struct {
		name    string
		restart time.Duration
		keep    bool
	}{
		{"restart time 5s", 5 * time.Second, true},
		{"no restart time", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// a change from a holder, by when a host made it (a new run's
			// first view of the group, from nobody, is no move; one made
			// before the restart and heard after it is not the restart's)
			g, moves := timedGroup(t, Config{RestartTime: tc.restart, KeptFile: t.TempDir()})
			for _, h := range g.lbs {
				netlab.ServeEcho(t, h, port)
			}
			owner, c, r := g.echoOwner(t, vip4, port)
			defer c.Close()
			before := time.Now()
			if err := g.restart(g.host(owner), time.Second); err != nil {
				t.Fatal(err)
			}
			// the new run healthy and settled: the owner's view agrees with
			// the others' (polled)
			if err := netlab.Eventually(t.Context(), 10*time.Second, func() error {
				for _, h := range g.lbs {
					if hs := g.view(h.Name)[vip4]; len(hs) != 1 {
						return fmt.Errorf("%s: %s held by %v", h.Name, vip4, hs)
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			_, werr := c.Write([]byte("after the restart\n"))
			line, rerr := r.ReadString('\n')
			if !tc.keep {
				// the moves are heard through the hosts' event streams: polled
				_ = netlab.Eventually(t.Context(), 5*time.Second, func() error {
					if moves.since(before) == 0 {
						return errors.New("no move heard yet")
					}
					return nil
				})
			}
			m := moves.since(before)
			held := g.holders(vip4)
			t.Logf("after the restart of %s: %s held by %v, %d moves made, the connection: %q %v %v", owner, vip4, held, m, line, werr, rerr)
			if !tc.keep {
				if m == 0 || rerr == nil {
					t.Fatalf("without a restart time the address stayed (moves %d, connection %q %v)", m, line, rerr)
				}
				return
			}
			if m != 0 || len(held) != 1 || held[0] != owner {
				t.Fatalf("%d moves across the restart, %s held by %v, want none and %s", m, vip4, held, owner)
			}
			if werr != nil || rerr != nil || line != "after the restart\n" {
				t.Fatalf("the connection across the restart: %q, write %v, read %v; want the echo", line, werr, rerr)
			}
		})
	}
}
