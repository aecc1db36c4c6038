package cli

import (
	"errors"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/kubeclient"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/loop"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/memlimit"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pageout"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/quietgc"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

// defaultGCPercent is the collector's target when the environment does
// not set GOGC: the heap may grow by a quarter of its live size between
// collections instead of doubling. The controller's live heap is mostly
// its informer caches and the model (about 55 MiB at 10,000 Services);
// doubling it was most of its peak RSS.
const defaultGCPercent = 25

// tuneGC applies defaultGCPercent unless the operator set GOGC, and the
// soft memory limit of --memory-limit when given (limit > 0; it takes
// the place of GOMEMLIMIT's), and reports the setting in force.
func tuneGC(getenv func(string) string, limit int64, log *slog.Logger) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" || limit > 0 {
		log.Info("garbage collector tuned", "GOGC", getenv("GOGC"), "GOMEMLIMIT", getenv("GOMEMLIMIT"), "memory_limit", limit)
	}
}

// quietCollector collects the garbage of the Services mode's passes in
// the quiet after them (internal/quietgc), unless the operator tuned the collector with
// GOGC: then the runtime's pacing alone decides, as they set it. nil
// (no watcher) in that case.
func quietCollector(getenv func(string) string, log *slog.Logger) loop.PassWatcher {
	if getenv("GOGC") != "" {
		return nil
	}
	return quietgc.New(log)
}

// pageOutStart hands the kernel back the executable's pages that the
// process's start touched (every package's init; internal/pageout): they
// would stay resident for as long as it runs (~11 MiB of the peak RSS at
// 10,000 Services, ~24 MiB of an idle controller's). What the controller uses later faults back in. A kernel
// without MADV_PAGEOUT leaves them, said at debug level. Once per
// process: a later run in the same process (tests run several) finds
// only pages its work uses. On a goroutine of its own: the kernel's
// reclaim of ~50 MiB took 116 ms of a start at 10,000 Services (loaded,
// BENCHMARKS.md, issue 29), and the start goes on meanwhile (the lists
// come after it anyway, and the peak after them). done is closed once it
// ended.
func pageOutStart(log *slog.Logger) (done <-chan struct{}) {
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		pageOutOnce.Do(func() { pageOut(log, "start-up pages of the executable paged out") })
	}()
	return ch
}

// pageOutSynced hands the kernel back, once the informer caches synced,
// the executable's pages that the lists touched (client-go's reflectors,
// decoding, HTTP/2) and the first pass does not: the peak comes at the
// end of the first pass, and they were ~11 MiB of it at 10,000 Services
// (RssFile 33 -> 22 MiB, VmHWM 120-128 -> 110 MiB; BENCHMARKS.md, issue
// 29). What the pass and later watch events use faults back in from the
// page cache. On a goroutine, as at the start. Once per process.
func pageOutSynced(log *slog.Logger) {
	go pageOutSyncedOnce.Do(func() { pageOut(log, "pages of the executable paged out after the lists") })
}

var pageOutSyncedOnce sync.Once

// pageOutApplied hands the kernel back, once the first pass applied,
// the executable's pages only the start-up's work touched (the first
// whole compute, the pool's growth, the reload and its read back): the
// peak comes right after that pass (issue 29). What later passes use
// faults back in. On a goroutine, as at the start. Once per process.
func pageOutApplied(log *slog.Logger) {
	go pageOutAppliedOnce.Do(func() { pageOut(log, "pages of the executable paged out after the first pass") })
}

var pageOutAppliedOnce sync.Once

// pageOutExecutable is pageout.Executable (a test's stand-in).
var pageOutExecutable = pageout.Executable

var pageOutOnce sync.Once

func pageOut(log *slog.Logger, msg string) {
	t0 := time.Now()
	res, err := pageOutExecutable()
	switch {
	case errors.Is(err, pageout.ErrUnsupported):
		log.Debug("pages of the executable kept", "reason", err)
	case err != nil:
		log.Warn("pages of the executable kept", "err", err)
	default:
		log.Info(msg, "mappings", res.Mappings,
			"file_kib_before", res.FileKiBBefore, "file_kib_after", res.FileKiBAfter, "took", time.Since(t0))
	}
}

// memoryLimit parses --memory-limit: a Kubernetes quantity of bytes
// (140Mi, 150M, 157286400), "" or 0 for none, or auto: the Services
// mode's limit that follows the cluster (internal/memlimit).
func memoryLimit(s string) (limit int64, auto bool, err error) {
	if s == "" {
		return 0, false, nil
	}
	if s == "auto" {
		return 0, true, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() < 0 {
		return 0, false, flagErr("--memory-limit: want a quantity of bytes such as 140Mi, or auto, got %q", s)
	}
	v, ok := q.AsInt64()
	if !ok || v < 0 {
		return 0, false, flagErr("--memory-limit: %q is out of range", s)
	}
	if v > 0 && v < 32<<20 {
		return 0, false, flagErr("--memory-limit: %q is below the 32Mi the controller needs to start", s)
	}
	return v, false, nil
}

// memoryTuner is the limit that follows the cluster's size
// (internal/memlimit) when --memory-limit=auto, the Services mode's
// default, or nil. At 10,000 Services it takes the burst's peak from
// 108-112 to 96-99 MiB with a new Service's latency unchanged
// (BENCHMARKS.md, issue 29). The operator's GOMEMLIMIT (the manifests set
// the container's limit there) bounds it from above: the runtime's limit
// when the tuner is made, after tuneGC; GOMEMLIMIT=off is the
// operator's "no limit", and then none is set (said either way).
func memoryTuner(getenv func(string) string, auto bool, log *slog.Logger) *memlimit.Tuner {
	if !auto {
		return nil
	}
	v := strings.TrimSpace(getenv("GOMEMLIMIT"))
	if v == "off" {
		log.Info("memory limit not following the cluster: GOMEMLIMIT=off")
		return nil
	}
	if v != "" {
		log.Info("memory limit follows the cluster below GOMEMLIMIT", "GOMEMLIMIT", v)
	}
	return memlimit.New(memlimit.Default, log)
}

// startHoldBound bounds the collector's hold for a start
// (memlimit.Start): a first pass that never applies (HAProxy refusing
// every reload) gives it back after this long.
const startHoldBound = time.Minute

// startHold holds the collector from the caches synced until the first
// pass applied (memlimit.HoldStart: no collection for each quarter the
// heap grows, a soft limit instead; issue 29, the initial sync at 10,000
// Services). The operator's GOGC wins; with --memory-limit=auto the
// Tuner keeps setting the limit and only the target is held.
type startHold struct {
	getenv func(string) string
	tuned  bool
	log    *slog.Logger
	mu     sync.Mutex
	st     *memlimit.Start
}

// synced holds the collector for the caches' size. Called before the
// first pass (controller.Options.OnSynced): the snapshot is serial with
// the passes.
func (h *startHold) synced(snapshot func() (services, endpoints int)) {
	svcs, eps := snapshot()
	st := memlimit.HoldStart(memlimit.Default, memlimit.Size{Services: svcs, Endpoints: eps}, h.getenv("GOGC") != "", !h.tuned,
		kubeclient.Streamed(), h.log)
	h.mu.Lock()
	h.st = st
	h.mu.Unlock()
	time.AfterFunc(startHoldBound, h.applied)
}

// applied gives the collector back (controller.Options.OnApplied, or
// startHoldBound after synced). Once.
func (h *startHold) applied() {
	h.mu.Lock()
	st := h.st
	h.mu.Unlock()
	st.End()
}

// sourceSize counts the Services and endpoints the caches hold.
func sourceSize(src *source.Source) func() (services, endpoints int) {
	return func() (int, int) {
		svcs, eps, _ := src.Snapshot()
		return len(svcs), desired.CountEndpoints(eps)
	}
}
