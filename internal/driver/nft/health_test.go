package nft

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"
)

func TestParseHealth(t *testing.T) {
	tests := []struct {
		in   string
		want Health
		bad  bool
	}{
		{in: DefaultHealth, want: Health{Kind: "http", Port: 10256, Path: "/healthz", Interval: time.Second}},
		{in: "http:8080", want: Health{Kind: "http", Port: 8080, Path: "/", Interval: time.Second}},
		{in: "tcp:22", want: Health{Kind: "tcp", Port: 22, Path: "/", Interval: time.Second}},
		{in: "none", want: Health{Kind: "none", Interval: time.Second}},
		{in: "tcp:22/x", bad: true},
		{in: "http:0", bad: true},
		{in: "http:99999", bad: true},
		{in: "udp:53", bad: true},
		{in: "http:80/a b", bad: true},
		{in: "http:80/a?b", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseHealth(tt.in, time.Second)
		if (err != nil) != tt.bad || (!tt.bad && got != tt.want) {
			t.Errorf("ParseHealth(%q) = %+v, %v", tt.in, got, err)
		}
	}
}

// A node leaves after exactly two failed probes and comes back after
// exactly two good ones; one bad probe between good ones changes nothing.
func TestProberRiseFall(t *testing.T) {
	a := netip.MustParseAddr("198.51.100.6")
	results := []bool{true, false, true, false, false, true, false, true, true, true}
	var mu sync.Mutex
	probes := 0
	var flips []int // probe count at each state change
	done := make(chan struct{})
	p := newProber(Health{Kind: "tcp", Port: 1, Interval: time.Millisecond}, nil, nil)
	p.changed = func(netip.Addr, bool) {
		mu.Lock()
		flips = append(flips, probes)
		mu.Unlock()
	}
	p.check = func(context.Context, netip.Addr) bool {
		mu.Lock()
		defer mu.Unlock()
		if probes == len(results) {
			select {
			case <-done:
			default:
				close(done)
			}
			return true
		}
		probes++
		return results[probes-1]
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.track(ctx, map[netip.Addr]bool{a: true})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("probes did not run")
	}
	mu.Lock()
	defer mu.Unlock()
	// Down after probes 4 and 5 failed; up after probes 8 and 9 passed
	// (probe 7 failed, so 6 alone was not enough).
	if len(flips) != 2 || flips[0] != 5 || flips[1] != 9 {
		t.Errorf("state changed after probes %v, want [5 9]", flips)
	}
	if p.down(a) {
		t.Errorf("the node ends down")
	}
}
