package layer2

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// TestDrainHandsOver: a Pod of the chart going away (docs/addresses.md):
// the owner's health gate fails while its server still serves (the
// drain file; HAProxy waiting in its preStop hook), then its controller
// stops and a new one starts (the new Pod), healthy a second later. A
// client opening a new connection every 10 ms meanwhile is refused none
// (the old owner serves until the address has moved) and loses at most
// the one in flight at the move (accepted by the old owner just before
// it let go, its answer unsent: docs/addresses.md); the stop, its host
// unhealthy, keeps nothing for a restart although a restart time is set
// (no kept file); the new run takes nothing back.
func TestDrainHandsOver(t *testing.T) {
	kept := t.TempDir()
	g := newGroup(t, Config{RestartTime: 5 * time.Second, KeptFile: kept})
	owner, err := g.steady(vip4, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	h := g.host(owner)
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	var asked, failed, refused int
	var slowest time.Duration
	var lastErr error
	by := map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			start := time.Now()
			// 1.5 s: a SYN sent to the old owner's MAC just after it let
			// the address go is retransmitted after 1 s, to the new owner
			name, err := g.ask(vip4, 1500*time.Millisecond)
			mu.Lock()
			asked++
			slowest = max(slowest, time.Since(start))
			switch {
			case errors.Is(err, syscall.ECONNREFUSED):
				refused++
				lastErr = err
			case err != nil:
				failed++
				lastErr = err
			default:
				by[name]++
			}
			mu.Unlock()
			time.Sleep(10 * time.Millisecond) // the client's pace
		}
	}()
	// the client steady on the owner first
	if err := netlab.Eventually(t.Context(), 5*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if by[owner] < 5 {
			return fmt.Errorf("answers %v, want 5 from %s", by, owner)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := g.healthy(h, false); err != nil { // the drain
		t.Fatal(err)
	}
	var next string
	if err := netlab.Eventually(t.Context(), 5*time.Second, func() error {
		hs := g.holders(vip4)
		if len(hs) != 1 || hs[0] == owner {
			return fmt.Errorf("%s held by %v, want one host other than %s", vip4, hs, owner)
		}
		next = hs[0]
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := g.restart(h, time.Second); err != nil {
		t.Fatal(err)
	}
	// the new run heard the group and says who holds it
	if err := netlab.Eventually(t.Context(), 10*time.Second, func() error {
		if v := g.view(owner)[vip4]; !slices.Equal(v, []string{next}) {
			return fmt.Errorf("the new run of %s says %s is held by %v, want %s", owner, vip4, v, next)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// and it became healthy a second after its start: still nothing back
	end := time.Now().Add(2 * time.Second)
	for time.Now().Before(end) {
		if hs := g.holders(vip4); !slices.Equal(hs, []string{next}) {
			t.Fatalf("%s held by %v after the new run of %s, want %s only", vip4, hs, owner, next)
		}
		time.Sleep(100 * time.Millisecond) // the pace of the check
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d new connections across the handover from %s to %s: %v, %d refused, %d failed otherwise, the slowest %s",
		asked, owner, next, by, refused, failed, slowest.Round(time.Millisecond))
	if refused != 0 || failed > 1 || by[next] == 0 {
		t.Fatalf("%d of %d new connections refused, %d failed otherwise (the last: %v), answered %v: want none refused, at most one lost at the move, %s answering",
			refused, asked, failed, lastErr, by, next)
	}
	if _, err := os.Stat(filepath.Join(kept, owner+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s kept its addresses for a restart although it stopped unhealthy (%v)", owner, err)
	}
}
