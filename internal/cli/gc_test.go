package cli

import (
	"bytes"
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/memlimit"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pageout"
)

func TestTuneGC(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name      string
		env       map[string]string
		limit     int64
		want      int
		wantLimit int64
	}{
		{"default", nil, 0, defaultGCPercent, math.MaxInt64},
		{"GOGC set", map[string]string{"GOGC": "200"}, 0, 123, math.MaxInt64},
		{"GOMEMLIMIT set: GOGC still ours", map[string]string{"GOMEMLIMIT": "200MiB"}, 0, defaultGCPercent, math.MaxInt64},
		{"--memory-limit", nil, 140 << 20, defaultGCPercent, 140 << 20},
		{"--memory-limit and GOGC", map[string]string{"GOGC": "50", "GOMEMLIMIT": "1GiB"}, 100 << 20, 123, 100 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := debug.SetGCPercent(123)
			defer debug.SetGCPercent(old)
			oldLimit := debug.SetMemoryLimit(math.MaxInt64)
			defer debug.SetMemoryLimit(oldLimit)
			tuneGC(func(k string) string { return tc.env[k] }, tc.limit, log)
			if got := debug.SetGCPercent(123); got != tc.want {
				t.Errorf("GC percent %d, want %d", got, tc.want)
			}
			if got := debug.SetMemoryLimit(-1); got != tc.wantLimit {
				t.Errorf("memory limit %d, want %d", got, tc.wantLimit)
			}
		})
	}
}

func TestMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		auto bool
		err  bool
	}{
		{"", 0, false, false},
		{"0", 0, false, false},
		{"auto", 0, true, false}, // the Services mode's limit follows the cluster
		{"140Mi", 140 << 20, false, false},
		{"150M", 150_000_000, false, false},
		{"157286400", 157286400, false, false},
		{"1Gi", 1 << 30, false, false},
		{"10Mi", 0, false, true}, // too small to start
		{"-1Mi", 0, false, true},
		{"lots", 0, false, true},
		{"Auto", 0, false, true},
		{"140MiB", 0, false, true}, // Go's spelling, not a quantity
	} {
		got, auto, err := memoryLimit(tc.in)
		if (err != nil) != tc.err || got != tc.want || auto != tc.auto {
			t.Errorf("memoryLimit(%q) = %d, %v, %v; want %d, %v, error %v", tc.in, got, auto, err, tc.want, tc.auto, tc.err)
		}
	}
}

// The limit that follows the cluster is there with --memory-limit=auto,
// run's default: below the operator's GOMEMLIMIT (the runtime's limit
// it parsed), and not at all with GOMEMLIMIT=off, a quantity or 0.
func TestMemoryTunerBelowTheOperators(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		flag    string
		runtime int64 // the runtime's limit, as GOMEMLIMIT set it
		tuner   bool
		said    string
		want    int64 // the limit the tuner sets at 10,000 Services x 5
	}{
		{"auto", nil, "auto", math.MaxInt64, true, "", memlimit.Default.For(scale10k, 0)},
		{"auto and GOGC", map[string]string{"GOGC": "50"}, "auto", math.MaxInt64, true, "", memlimit.Default.For(scale10k, 0)},
		{"auto below a larger GOMEMLIMIT", map[string]string{"GOMEMLIMIT": "256MiB"}, "auto", 256 << 20, true, "below GOMEMLIMIT",
			memlimit.Default.For(scale10k, 0)},
		{"auto capped by a smaller GOMEMLIMIT", map[string]string{"GOMEMLIMIT": "70MiB"}, "auto", 70 << 20, true, "below GOMEMLIMIT", 70 << 20},
		{"auto and GOMEMLIMIT off", map[string]string{"GOMEMLIMIT": "off"}, "auto", math.MaxInt64, false, "GOMEMLIMIT=off", 0},
		{"--memory-limit=", nil, "", math.MaxInt64, false, "", 0},
		{"--memory-limit", nil, "140Mi", 140 << 20, false, "", 0},
		{"--memory-limit=0", nil, "0", math.MaxInt64, false, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, auto, err := memoryLimit(tc.flag)
			if err != nil {
				t.Fatal(err)
			}
			old := debug.SetMemoryLimit(tc.runtime)
			defer debug.SetMemoryLimit(old)
			var buf bytes.Buffer
			tu := memoryTuner(func(k string) string { return tc.env[k] }, auto, slog.New(slog.NewTextHandler(&buf, nil)))
			if got := tu != nil; got != tc.tuner {
				t.Fatalf("a limit following the cluster: %v, want %v", got, tc.tuner)
			}
			if tc.said != "" && !strings.Contains(buf.String(), tc.said) {
				t.Errorf("log %q, want it to say %q", buf.String(), tc.said)
			}
			if tu == nil {
				return
			}
			if got := tu.Follow(scale10k); got != tc.want {
				t.Errorf("limit %.1f MiB, want %.1f", float64(got)/(1<<20), float64(tc.want)/(1<<20))
			}
		})
	}
}

// scale10k is the benchmarks' cluster: 10,000 Services, 5 endpoints each.
var scale10k = memlimit.Size{Services: 10000, Endpoints: 50000}

// run's default is the limit that follows the cluster.
func TestMemoryLimitDefaultsToAuto(t *testing.T) {
	var f runFlags
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.register(fs, func(string) string { return "" })
	if _, auto, err := memoryLimit(f.memLimit); err != nil || !auto {
		t.Errorf("--memory-limit defaults to %q (auto %v, %v), want auto", f.memLimit, auto, err)
	}
}

// TestQuietCollectorUnlessGOGC: the passes' garbage is collected in the
// quiet after them unless the operator set GOGC (then the runtime's
// pacing alone, as they set it); GOMEMLIMIT and --memory-limit leave it on.
func TestQuietCollectorUnlessGOGC(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		on   bool
	}{
		{"default", nil, true},
		{"GOGC", map[string]string{"GOGC": "25"}, false},
		{"GOGC off", map[string]string{"GOGC": "off"}, false},
		{"GOMEMLIMIT", map[string]string{"GOMEMLIMIT": "256MiB"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := quietCollector(func(k string) string { return tc.env[k] }, slog.New(slog.DiscardHandler))
			if got := w != nil; got != tc.on {
				t.Errorf("quiet collector %v, want %v", got, tc.on)
			}
		})
	}
}

// The executable's start-up pages are paged out once per process: a
// second run in the same process (the tests start many) does not page
// out what its work uses.
func TestPageOutStartOnce(t *testing.T) {
	pageOutOnce = sync.Once{}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, done := range []<-chan struct{}{pageOutStart(log), pageOutStart(log)} {
		<-done
	}
	if n := strings.Count(buf.String(), "start-up pages of the executable"); n != 1 {
		t.Fatalf("%d page-out lines, want 1:\n%s", n, buf.String())
	}
}

// The start does not wait for the page-out (the kernel's reclaim took
// 116 ms of a start at 10,000 Services): pageOutStart returns while it
// runs, and says when it ended.
func TestPageOutStartDoesNotHoldTheStart(t *testing.T) {
	pageOutOnce = sync.Once{}
	release := make(chan struct{})
	was := pageOutExecutable
	defer func() { pageOutExecutable = was }()
	pageOutExecutable = func() (pageout.Result, error) {
		<-release
		return pageout.Result{}, pageout.ErrUnsupported
	}
	returned := make(chan (<-chan struct{}), 1)
	go func() { returned <- pageOutStart(slog.New(slog.DiscardHandler)) }()
	var done <-chan struct{}
	select {
	case done = <-returned:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("pageOutStart waited for the page-out")
	}
	select {
	case <-done:
		t.Fatal("done before the page-out ended")
	default:
	}
	close(release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("done not closed after the page-out ended")
	}
}
