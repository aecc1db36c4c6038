package layer2

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
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
			var moves atomic.Int64
			cfg := Config{RestartTime: tc.restart, KeptFile: t.TempDir(),
				// a change from a holder heard (a new run's first view of
				// the group, from nobody, is no move)
				OnMove: func(m announce.Move) {
					if len(m.From) > 0 {
						moves.Add(1)
					}
				}}
			g := newGroup(t, cfg)
			for _, h := range g.lbs {
				netlab.ServeEcho(t, h, port)
			}
			owner, c, r := g.echoOwner(t, vip4, port)
			defer c.Close()
			before := moves.Load()
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
			m := moves.Load() - before
			held := g.holders(vip4)
			t.Logf("after the restart of %s: %s held by %v, %d moves heard, the connection: %q %v %v", owner, vip4, held, m, line, werr, rerr)
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
