package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// burstLoad is what the apiserver's side of a burst costs, taken around
// it: the CPU time of the kube-apiserver, etcd, the controller and the
// test process itself, the machine's busy share, the apiserver's own
// request and etcd histograms (/metrics, the sums' and counts'
// differences), and with HKS_BENCH_APISERVER_PROFILE=PATH a CPU profile
// of the apiserver (PATH.LABEL.pprof, HKS_BENCH_APISERVER_PROFILE_SECONDS
// long, default 5) and its block profile over the same seconds
// (PATH.LABEL.block.pprof; the apiserver then runs with --profiling=true
// --contention-profiling=true: svcScaleWorld).
type burstLoad struct {
	w       *newSvcWorld
	label   string
	pids    []namedPID
	cpu0    []int64
	busy0   [2]int64
	series0 map[string]hist
	start   time.Time
	prof    chan error
}

type namedPID struct {
	name string
	pid  int
}

// hist is a histogram series' sample count and sum.
type hist struct{ count, sum float64 }

func (w *newSvcWorld) startLoad(b *testing.B, label string, ctlPID int) *burstLoad {
	api, etcd := w.kube.PIDs()
	l := &burstLoad{w: w, label: label, pids: []namedPID{{"kube-apiserver", api}, {"etcd", etcd}}}
	if ctlPID > 0 {
		l.pids = append(l.pids, namedPID{"controller", ctlPID})
	}
	l.pids = append(l.pids, namedPID{"the test", os.Getpid()})
	l.series0 = w.apiserverHists(b)
	if path := os.Getenv("HKS_BENCH_APISERVER_PROFILE"); path != "" {
		l.prof = make(chan error, 1)
		secs := benchEnvInt("HKS_BENCH_APISERVER_PROFILE_SECONDS", 5)
		go func() {
			block := make(chan error, 1)
			go func() { block <- w.apiserverProfile("block", fmt.Sprintf("%s.%s.block.pprof", path, label), secs) }()
			err := w.apiserverProfile("profile", fmt.Sprintf("%s.%s.pprof", path, label), secs)
			l.prof <- errors.Join(err, <-block)
		}()
	}
	for _, p := range l.pids {
		l.cpu0 = append(l.cpu0, procTicks(p.pid))
	}
	l.busy0 = machineTicks()
	l.start = time.Now()
	return l
}

// stop ends the accounts and returns them as one line.
func (l *burstLoad) stop(b *testing.B) string {
	wall := time.Since(l.start)
	busy1 := machineTicks()
	var parts []string
	for i, p := range l.pids {
		used := time.Duration(procTicks(p.pid)-l.cpu0[i]) * time.Second / clockTicks
		parts = append(parts, fmt.Sprintf("%s %.2f s", p.name, used.Seconds()))
	}
	line := fmt.Sprintf("CPU over %.2f s: %s; the machine %.0f%% busy; apiserver: %s", wall.Seconds(), strings.Join(parts, ", "),
		busyShare(l.busy0, busy1), histDiff(l.series0, l.w.apiserverHists(b)))
	if l.prof != nil {
		if err := <-l.prof; err != nil {
			b.Logf("%s: apiserver profile: %v", l.label, err)
		}
	}
	return line
}

// procTicks is process pid's user and system CPU time so far, in ticks.
func procTicks(pid int) int64 {
	s := readFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state): utime is field 14
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

// machineTicks is every CPU's busy and total time so far (/proc/stat's
// first line; idle and iowait are not busy).
func machineTicks() [2]int64 {
	line, _, _ := strings.Cut(readFile("/proc/stat"), "\n")
	f := strings.Fields(line)
	var busy, total int64
	for i, v := range f[min(1, len(f)):] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i >= 8 { // guest times are already in user
			break
		}
		total += n
		if i != 3 && i != 4 {
			busy += n
		}
	}
	return [2]int64{busy, total}
}

func busyShare(a, b [2]int64) float64 {
	if b[1] == a[1] {
		return 0
	}
	return 100 * float64(b[0]-a[0]) / float64(b[1]-a[1])
}

// apiserverHists reads the apiserver's histograms the accounts use:
// request durations by verb and resource (watches left out), etcd
// requests by operation and type, and the priority-and-fairness queue
// wait by priority level.
func (w *newSvcWorld) apiserverHists(b *testing.B) map[string]hist {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	raw, err := w.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		b.Logf("apiserver /metrics: %v", err)
		return nil
	}
	return parseHists(raw)
}

// parseHists keeps parts of the apiserver's /metrics: each series named
// by its histogram's short name and the labels that tell it apart.
func parseHists(raw []byte) map[string]hist {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil && len(mfs) == 0 {
		return nil
	}
	keep := map[string][]string{
		"apiserver_request_duration_seconds":                  {"verb", "resource"},
		"etcd_request_duration_seconds":                       {"operation", "type"},
		"apiserver_flowcontrol_request_wait_duration_seconds": {"priority_level"},
		"apiserver_admission_step_admission_duration_seconds": {"operation", "type"},
	}
	out := map[string]hist{}
	for name, labels := range keep {
		mf, ok := mfs[name]
		if !ok {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			if h == nil {
				continue
			}
			vals := map[string]string{}
			for _, l := range m.GetLabel() {
				vals[l.GetName()] = l.GetValue()
			}
			if vals["verb"] == "WATCH" || vals["verb"] == "CONNECT" {
				continue
			}
			var key []string
			for _, l := range labels {
				key = append(key, vals[l])
			}
			k := strings.TrimSuffix(strings.TrimPrefix(name, "apiserver_"), "_duration_seconds") + " " + strings.Join(key, " ")
			old := out[k]
			out[k] = hist{count: old.count + float64(h.GetSampleCount()), sum: old.sum + h.GetSampleSum()}
		}
	}
	return out
}

// histDiff names the series that grew between a and b, the largest sum
// first: each with its count, total and mean.
func histDiff(a, b map[string]hist) string {
	type row struct {
		key string
		d   hist
	}
	var rows []row
	for k, v := range b {
		d := hist{count: v.count - a[k].count, sum: v.sum - a[k].sum}
		if d.count >= 1 {
			rows = append(rows, row{k, d})
		}
	}
	slices.SortFunc(rows, func(x, y row) int {
		if x.d.sum != y.d.sum {
			if x.d.sum > y.d.sum {
				return -1
			}
			return 1
		}
		return strings.Compare(x.key, y.key)
	})
	var parts []string
	for _, r := range rows[:min(len(rows), 12)] {
		parts = append(parts, fmt.Sprintf("%s: %.0f, %.0f ms (mean %.2f)", r.key, r.d.count, 1000*r.d.sum, 1000*r.d.sum/r.d.count))
	}
	if len(parts) == 0 {
		return "no request"
	}
	return strings.Join(parts, "; ")
}

// apiserverProfile writes the apiserver's profile kind over secs seconds
// to path: "profile" (CPU) or "block" (where goroutines waited, a lock
// among them: the difference over the seconds; the apiserver runs with
// --contention-profiling=true then).
func (w *newSvcWorld) apiserverProfile(kind, path string, secs int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs+30)*time.Second)
	defer cancel()
	raw, err := w.client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/"+kind).
		Param("seconds", strconv.Itoa(secs)).DoRaw(ctx)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o644)
}
