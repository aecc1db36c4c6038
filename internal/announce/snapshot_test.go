package announce

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
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
	// nothing changed: the file is not written again (same inode, same
	// Changed), only its modification time renewed, which is what
	// status reads as Updated
	first, fi := snapshotAt(t, path)
	deadline := time.Now().Add(3 * SnapshotEvery)
	for {
		s, si := snapshotAt(t, path)
		if !s.Changed.Equal(first.Changed) || inode(si) != inode(fi) {
			t.Fatalf("rewritten without a change: changed %v -> %v, inode %d -> %d", first.Changed, s.Changed, inode(fi), inode(si))
		}
		if s.Updated.After(first.Updated) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the file's time not renewed within %v: %v", 3*SnapshotEvery, s.Updated)
		}
		time.Sleep(20 * time.Millisecond) // the pace of the polls
	}
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

// TestSnapshotStaleByFileTime: a file whose modification time is older
// than StaleAfter is stale, whatever it says of its last change.
func TestSnapshotStaleByFileTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), SnapshotFile)
	now := time.Now()
	if err := os.WriteFile(path, []byte(`{"announcer":"l2","changed":"`+now.UTC().Format(time.RFC3339Nano)+`","holders":{"192.0.2.10":["lb1"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		age   time.Duration
		stale bool
	}{{0, false}, {StaleAfter - time.Second, false}, {StaleAfter + time.Second, true}} {
		at := now.Add(-tc.age)
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
		s, err := ReadSnapshot(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Stale(now); got != tc.stale || !s.Updated.Equal(at.UTC()) {
			t.Errorf("file %v old: stale %v (updated %v), want %v", tc.age, got, s.Updated, tc.stale)
		}
	}
}

func snapshotAt(t *testing.T, path string) (Snapshot, os.FileInfo) {
	t.Helper()
	s, err := ReadSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return s, fi
}

func inode(fi os.FileInfo) uint64 { return fi.Sys().(*syscall.Stat_t).Ino }
