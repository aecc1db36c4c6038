package netlab

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"
)

const namePort = 7070

// reaches says whether a TCP connection from `from` to `to` is greeted
// with to's name: when want, polled for 3 s (a neighbour entry may be
// failed from the cut); when not, three tries of 300 ms each (one hop on
// a bridge) all unanswered.
func reaches(from, to *Host, want bool) bool {
	ask := func() error {
		name, err := AskName(from.NS, netip.AddrPortFrom(to.Addr, namePort), 300*time.Millisecond)
		if err == nil && name != to.Name {
			err = fmt.Errorf("greeted by %q", name)
		}
		return err
	}
	if want {
		return Eventually(context.Background(), 3*time.Second, ask) == nil
	}
	for range 3 {
		if ask() == nil {
			return true
		}
	}
	return false
}

// TestSegmentPartition: a and b cut from each other no longer reach each
// other, both still reach c and c both; healed, they reach each other
// again.
func TestSegmentPartition(t *testing.T) {
	s := NewSegment(t, "a", "b", "c")
	a, b, c := s.Hosts[0], s.Hosts[1], s.Hosts[2]
	for _, h := range s.Hosts {
		ServeName(t, h, namePort)
	}
	type pair struct {
		from, to *Host
		want     bool
	}
	check := func(stage string, pairs []pair) {
		t.Helper()
		for _, p := range pairs {
			if got := reaches(p.from, p.to, p.want); got != p.want {
				t.Errorf("%s: %s reaches %s = %v, want %v", stage, p.from.Name, p.to.Name, got, p.want)
			}
		}
	}
	check("before", []pair{{a, b, true}, {b, a, true}, {a, c, true}, {b, c, true}})
	if err := s.Partition(a, b, true); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Partition(a, b, false) })
	check("cut", []pair{{a, b, false}, {b, a, false}, {a, c, true}, {c, b, true}, {b, c, true}})
	if err := s.Partition(a, b, false); err != nil {
		t.Fatal(err)
	}
	check("healed", []pair{{a, b, true}, {b, a, true}, {a, c, true}})
}
