package announce

import (
	"testing"
	"time"
)

// TestNodeDue: a decision is due by the passing of time alone only when
// a peer live at the last Decide has fallen silent since, or a peer's
// restart window ended; not while every peer is as it was.
func TestNodeDue(t *testing.T) {
	s := newSim(t, addrs(3), "lb1", "lb2")
	s.step(5)
	n := s.nodes["lb1"]
	for _, tc := range []struct {
		name  string
		after time.Duration // since the last Decide
		due   bool
	}{
		{"just decided", 0, false},
		{"within the hold time", hold - tick, false},
		{"past the hold time", hold + tick, true},
	} {
		if got := n.Due(s.now.Add(tc.after)); got != tc.due {
			t.Fatalf("%s: Due %v, want %v", tc.name, got, tc.due)
		}
	}
	// lb2 leaves for a restart of 2 s: live through it, due when it ends
	s.nodes["lb2"].Leave(2 * time.Second)
	s.step(1)
	s.stopped["lb2"] = true
	if n.Due(s.now.Add(time.Second)) {
		t.Fatal("due within lb2's restart window")
	}
	if !n.Due(s.now.Add(2*time.Second + tick)) {
		t.Fatal("not due once lb2's restart window ended")
	}
}
