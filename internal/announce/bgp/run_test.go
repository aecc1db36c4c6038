package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

type recorder struct {
	addrs, sessions, held atomic.Int64
}

func (r *recorder) Addresses(n int)         { r.addrs.Store(int64(n)) }
func (r *recorder) Sessions(n int)          { r.sessions.Store(int64(n)) }
func (r *recorder) Held(addrs []netip.Addr) { r.held.Store(int64(len(addrs))) }

// TestRunReports: in-process, with a router that is not there (a closed
// port on loopback: no session), the announcer announces the addresses
// of a healthy Want and withdraws them all for an unhealthy one, and
// says so to its OnMove (why: new, then unhealthy); its Holders and its
// recorder's addresses stay empty throughout (no session established:
// the routes reach no router, and the metrics say what reaches one);
// Run ends with its context.
func TestRunReports(t *testing.T) {
	rec := &recorder{}
	rec.addrs.Store(-1)
	rec.held.Store(-1)
	var mu sync.Mutex
	var moves []announce.Move
	onMove := func(m announce.Move) { mu.Lock(); moves = append(moves, m); mu.Unlock() }
	// movedAll checks the moves told since the last call: one per address, each why
	movedAll := func(n int, why string) {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if len(moves) != n {
			t.Fatalf("moves %+v, want %d", moves, n)
		}
		for _, m := range moves {
			if m.Why != why {
				t.Fatalf("move %+v, want why %s", m, why)
			}
		}
		moves = nil
	}
	a, err := New(Config{ASN: 65001, RouterID: netip.MustParseAddr("192.0.2.2"), Metrics: rec, OnMove: onMove,
		Peers: []Peer{{Addr: netip.MustParseAddr("127.0.0.1"), Port: 1, ASN: 65000}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	want := func(n int) error {
		return netlab.Eventually(context.Background(), 5*time.Second, func() error {
			if got := len(a.Announced(ctx)); got != n || rec.addrs.Load() != 0 || rec.held.Load() != 0 {
				return fmt.Errorf("announced %d, recorded %d and %d held, want %d announced and 0 recorded", got, rec.addrs.Load(), rec.held.Load(), n)
			}
			if hs := a.Holders(ctx); len(hs) != 0 {
				return fmt.Errorf("holders %v with no session up, want none", hs)
			}
			return nil
		})
	}
	w := announce.Want{Addrs: []netip.Addr{vip4, vip4b, netip.MustParseAddr("2001:db8::10")}, Healthy: true}
	a.Set(w)
	if err := want(3); err != nil {
		t.Fatal(err)
	}
	movedAll(3, announce.WhyNew)
	w.Healthy = false
	a.Set(w)
	if err := want(0); err != nil {
		t.Fatal(err)
	}
	movedAll(3, announce.WhyUnhealthy)
	if rec.sessions.Load() != 0 {
		t.Fatalf("%d sessions up with no router", rec.sessions.Load())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end")
	}
}
