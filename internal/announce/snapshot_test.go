package announce

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestKeepSnapshot: the file says who announces each address as the
// holders say, follows a change at once when woken, and is removed when
// the controller stops (nobody keeps it true any more).
func TestKeepSnapshot(t *testing.T) {
	path := filepath.Join(t.TempDir(), SnapshotFile)
	vip := netip.MustParseAddr("192.0.2.10")
	var mu sync.Mutex
	holders := Holders{vip: {"lb1"}}
	wake := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- KeepSnapshot(ctx, path, "l2", func(context.Context) Holders { mu.Lock(); defer mu.Unlock(); return holders }, wake)
	}()
	// holdsIs polls the file until vip's holders are want, for within
	holdsIs := func(within time.Duration, want ...string) {
		t.Helper()
		deadline := time.Now().Add(within)
		var last Snapshot
		var err error
		for time.Now().Before(deadline) {
			if last, err = ReadSnapshot(path); err == nil && last.Announcer == "l2" && slices.Equal(last.Holders[vip], want) && !last.Stale(time.Now()) {
				return
			}
			time.Sleep(5 * time.Millisecond) // the pace of the polls
		}
		t.Fatalf("snapshot %+v (%v), want %s held by %v", last, err, vip, want)
	}
	holdsIs(5*time.Second, "lb1")
	mu.Lock()
	holders = Holders{vip: {"lb2"}}
	mu.Unlock()
	wake <- struct{}{}
	holdsIs(SnapshotEvery*3/4, "lb2") // woken: before the next tick
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("KeepSnapshot did not end")
	}
	if _, err := ReadSnapshot(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the file is left after the stop: %v", err)
	}
}
