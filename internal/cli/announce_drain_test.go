package cli

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// TestAnnounceDrain: with --announce-drain-file the health gate fails
// while the file exists (errDraining, whatever readiness says) and
// passes again once it is gone; a file left by the run before is
// removed at start; without the flag the gate is readiness alone.
func TestAnnounceDrain(t *testing.T) {
	ctx := context.Background()
	notReady := errors.New("informer caches not synced")
	ready := func(context.Context) error { return nil }
	file := filepath.Join(t.TempDir(), "drain")
	touch := func() {
		t.Helper()
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.DiscardHandler)
	touch() // left by the run before
	check := (&announceFlags{drainFile: file}).drained(ready, log)
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the run before's drain file is still there (%v)", err)
	}
	for _, tc := range []struct {
		name  string
		drain bool
		want  error
	}{
		{"no file", false, nil},
		{"the file created", true, errDraining},
		{"the file removed", false, nil},
	} {
		if tc.drain {
			touch()
		} else if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if err := check(ctx); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Fatalf("%s: the gate says %v, want %v", tc.name, err, tc.want)
		}
	}
	touch()
	if err := (&announceFlags{drainFile: file}).drained(func(context.Context) error { return notReady }, log)(ctx); !errors.Is(err, notReady) {
		t.Fatalf("started again, not ready: %v, want %v (the drain file removed at start)", err, notReady)
	}
	if err := (&announceFlags{}).drained(ready, log)(ctx); err != nil {
		t.Fatalf("no drain file: %v", err)
	}
}
