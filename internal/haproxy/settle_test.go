package haproxy

import (
	"fmt"
	"testing"
)

// An address change is in place for every reader once Exec returns: a
// fresh connection, which HAProxy may serve on another thread, reads the
// new address at once. 3.0 answers the change before applying it (see
// settle.go); without the settling round trip this test saw the previous
// address on 3.0.11 in 5 to 30 of its 300 rounds with two threads.
func TestAddressChangeSettled(t *testing.T) {
	tests := []struct {
		name string
		cmds func(i int) []string
	}{
		{"one command", func(i int) []string {
			return []string{fmt.Sprintf("set server be/s1 addr 127.0.%d.%d port 30001", i/250, i%250+1)}
		}},
		{"state then address", func(i int) []string {
			return []string{"set server be/s1 state maint", fmt.Sprintf("set server be/s1 addr 127.0.%d.%d port 30001", i/250, i%250+1), "set server be/s1 state ready"}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Two threads whatever the machine: the change is late only
			// for another thread.
			l := startLB(t, "    nbthread 2\n")
			ctx := testCtx(t)
			const rounds = 300
			stale := 0
			for i := range rounds {
				if _, err := l.rt.ExecChecked(ctx, tc.cmds(i)); err != nil {
					t.Fatal(err)
				}
				want := fmt.Sprintf("127.0.%d.%d", i/250, i%250+1)
				fresh := NewRuntime(l.proc.StatsSocket)
				states, err := fresh.ShowServersState(ctx)
				_ = fresh.Close()
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range states {
					if s.Backend == "be" && s.Server == "s1" && (s.Addr.String() != want || s.Port != 30001) {
						if stale == 0 {
							t.Errorf("round %d: another connection reads be/s1 at %s:%d after the change to %s:30001 was answered", i, s.Addr, s.Port, want)
						}
						stale++
					}
				}
			}
			if stale > 0 {
				t.Errorf("%d of %d rounds read the previous address (HAProxy %s)", stale, rounds, l.version(t))
			}
		})
	}
}
