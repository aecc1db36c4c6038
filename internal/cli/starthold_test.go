package cli

import (
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/kubeclient"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/memlimit"
)

// The start's hold (memlimit.HoldStart) as run wires it: from the caches
// synced until the first pass applied the collector's target is off and
// the limit the model's for the caches' size (and its room); the
// operator's GOGC wins; with --memory-limit=auto the Tuner's limit is
// left alone. The room over the model's limit follows how the first lists
// were read (client-go's WatchListClient, set here as run sets it).
func TestStartHold(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	size := func() (int, int) { return 10000, 50000 }
	model := memlimit.Default.For(memlimit.Size{Services: 10000, Endpoints: 50000}, 0)
	t.Cleanup(func() { _ = kubeclient.WatchListFromEnv(func(string) string { return "" }) })
	for _, tc := range []struct {
		name      string
		env       map[string]string
		tuned     bool
		heldGC    int
		heldLimit func(int64) bool
	}{
		{"default (streamed): held at the model's limit", nil, false, -1, func(l int64) bool {
			return l >= model && l < model+model/100*memlimit.StartRoomPercent
		}},
		{"plain lists: held with room", map[string]string{"KUBE_FEATURE_WatchListClient": "false"}, false, -1, func(l int64) bool {
			return l >= model+model/100*memlimit.StartRoomPercent && l < math.MaxInt64
		}},
		{"GOGC set: nothing held", map[string]string{"GOGC": "50"}, false, defaultGCPercent, func(l int64) bool { return l == math.MaxInt64 }},
		{"--memory-limit=auto: the target alone", nil, true, -1, func(l int64) bool { return l == math.MaxInt64 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			if err := kubeclient.WatchListFromEnv(getenv); err != nil {
				t.Fatal(err)
			}
			old := debug.SetGCPercent(defaultGCPercent)
			defer debug.SetGCPercent(old)
			oldLimit := debug.SetMemoryLimit(math.MaxInt64)
			defer debug.SetMemoryLimit(oldLimit)
			h := &startHold{getenv: getenv, tuned: tc.tuned, log: log}
			h.synced(size)
			gc, limit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
			debug.SetGCPercent(gc)
			if gc != tc.heldGC || !tc.heldLimit(limit) {
				t.Fatalf("held: GOGC %d, limit %d; want GOGC %d", gc, limit, tc.heldGC)
			}
			h.applied()
			if gc, limit := debug.SetGCPercent(defaultGCPercent), debug.SetMemoryLimit(-1); gc != defaultGCPercent || limit != math.MaxInt64 {
				t.Fatalf("applied: GOGC %d, limit %d; want %d, no limit", gc, limit, defaultGCPercent)
			}
		})
	}
}
