package haproxy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// A node's flip as HAProxy does it: 2,500 backends, each with a server
// tracking _nodes/s0, and one `set server _nodes/s0 state maint|ready` per
// op, with and without `quiet` in global (one stderr line per follower
// without it; the lab's stderr is a pipe the test reads, like a file).
// Prints the p50 of the ops in ms (flip-p50-ms). docs/health-checks.md.
//
//	go test -run '^$' -bench NodeFlip -benchtime 80x ./internal/haproxy/
func BenchmarkNodeFlip(b *testing.B) {
	const followers = 2500
	for _, quiet := range []bool{false, true} {
		b.Run(fmt.Sprintf("quiet=%v", quiet), func(b *testing.B) {
			dir := b.TempDir()
			var cfg strings.Builder
			cfg.WriteString(haproxytest.MinimalConfig(dir))
			if quiet {
				s := strings.Replace(cfg.String(), "global\n", "global\n    quiet\n", 1)
				cfg.Reset()
				cfg.WriteString(s)
			}
			cfg.WriteString("\nbackend _nodes\n    server s0 127.0.0.1:1 check inter 1h\n")
			for i := range followers {
				fmt.Fprintf(&cfg, "\nbackend be_%d\n    server s0 127.0.0.1:1 track _nodes/s0\n", i)
			}
			path := filepath.Join(dir, "haproxy.cfg")
			if err := os.WriteFile(path, []byte(cfg.String()), 0o600); err != nil {
				b.Fatal(err)
			}
			p := haproxytest.Start(b, dir, path)
			rt := NewRuntime(p.StatsSocket)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				state := "maint"
				if i%2 == 1 {
					state = "ready"
				}
				t := time.Now()
				if _, err := rt.ExecChecked(ctx, []string{"set server _nodes/s0 state " + state}); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t))
			}
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "flip-p50-ms")
		})
	}
}
