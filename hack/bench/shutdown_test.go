package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/shutdown"
)

// The benchmark stops within seconds on SIGTERM while its baseline
// (--apply=reload) is under way, and no process it started survives it:
// controller, HAProxy, load generator, kube-apiserver, etcd.
func TestBenchStopsPromptlyDuringTheBaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the whole benchmark")
	}
	work := filepath.Join(t.TempDir(), "work")
	// A free range of its own: 127.<subnet>.0.x nodes, ports unlikely taken.
	base := 21000 + rand.IntN(40)*200 // below the ephemeral ports others take
	shutdown.Check(t, shutdown.Program{
		Name: "benchmark",
		Args: []string{"-services", "10", "-endpoints", "2", "-nodes", "3", "-probe", "1", "-load-rate", "20",
			"-changes", "6", "-baseline-changes", "100000", "-health-checks", "false",
			"-frontend-base", fmt.Sprint(base), "-nodeport-base", "30000", "-subnet", fmt.Sprint(200 + rand.IntN(50)),
			"-dir", work, "-keep", "-controller-bin", shutdown.Self(t, "controller")},
		Dir: "../..", // where `make bench` runs it
		// The second "initial sync:" line is the baseline's.
		Ready:   func(out string) bool { return strings.Count(out, "initial sync: every server") >= 2 },
		Waiting: "its baseline churn",
		WorkDir: work,
		Signal:  syscall.SIGTERM,
	})
}
