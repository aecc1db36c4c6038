package runtimeapi

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// FuzzRestoreTracks reads a fuzzed haproxy.cfg back for the slots'
// bindings to nodes (what a controller that starts reads from the file
// HAProxy runs): it must not panic, must bind only slots that exist, and
// only to a node slot the file names.
func FuzzRestoreTracks(f *testing.F) {
	for _, s := range []string{
		"global\n  description hks:h1\nbackend be_a\n  server s0 192.0.2.1:80 track _nodes/s1\n  server s1 192.0.2.2:80 disabled track _nodes/s0 # drain\n",
		"global\n  description hks:h1\nbackend be_a\n  server s9 192.0.2.1:80 track _nodes/s65535\n",
		"global\n  description hks:other\nbackend be_a\n  server s0 192.0.2.1:80 track _nodes/s1\n",
		"backend be_a\n  server s0 x track\n", "\x00\n\tserver", "",
	} {
		f.Add([]byte(s))
	}
	log := slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "haproxy.cfg")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		layout := model.Layout{"be_a": make([]model.Slot, 2), "be_b": make([]model.Slot, 1)}
		restoreTracks(layout, path, "h1", log)
		if len(layout) != 2 || len(layout["be_a"]) != 2 || len(layout["be_b"]) != 1 {
			t.Fatalf("layout reshaped: %v", layout)
		}
	})
}
