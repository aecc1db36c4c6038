package e2e

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// restarts times BenchmarkServicesScaleNew's restarts (HKS_BENCH_RESTART=1)
// once run's parts are over, in the same world (issue 29's initial sync
// when the last run's files are there):
//
//   - the controller alone restarted beside the HAProxy it left running:
//     its first pass applied (the first "update" line without an error of
//     its debug log) after its start, and HAProxy's reloads meanwhile;
//   - HAProxy killed and started again from the files on disk together with
//     a new controller (a host's reboot): every Service served after the
//     controller's start, its first pass applied, the reloads.
//
// The world served by a fresh HAProxy, from `init`'s config, is run's own
// first number.
func (w *newSvcWorld) restarts(b *testing.B, c scaleController, nth int, ctl *scaleProc, hap *haproxytest.Process, args []string, mode string) {
	if os.Getenv("HKS_BENCH_RESTART") != "1" {
		return
	}
	dir := hap.Dir
	n := w.services // the world's (untilServicesServed knows their nodePorts); the new ones are there too
	c.env = append(append([]string(nil), c.env...), "HAPROXY_K8S_SYNC_LOG_LEVEL=debug")

	ctl.stop()
	reloads := benchReloads(b, hap)
	r0 := reloads()
	c.label += "-restart"
	ctl2, logPath, name, t0 := startScaleController(b, c, nth, dir, args)
	applied, err := untilPassApplied(logPath, 2*time.Minute)
	if err != nil {
		ctl2.stop()
		b.Fatalf("%s %s: %v; log: %s", name, mode, err, fileTail(logPath))
	}
	r1 := reloads()
	b.Logf("%s %s: the controller restarted beside a running HAProxy at %d Services: first pass applied %s after its start, %d reloads (load %s)",
		name, mode, n, applied.Sub(t0).Round(10*time.Millisecond), r1-r0, loadAvg())
	b.ReportMetric(applied.Sub(t0).Seconds(), mode+"-ctl-restart-s")
	b.ReportMetric(float64(r1-r0), mode+"-ctl-restart-reloads")
	ctl2.stop()
	logMapWork(b, name+" "+mode+" restarted", logPath)

	// A host's reboot: HAProxy and the controller start together, HAProxy
	// from the files the last run left.
	hap.Kill(b)
	c.label = strings.TrimSuffix(c.label, "-restart") + "-reboot"
	ctl3, logPath, name, t0 := startScaleController(b, c, nth, dir, args)
	defer ctl3.stop()
	hap.Restart(b) // returns once its worker answers: it parsed the last run's config
	up := time.Now()
	served, err := untilServicesServed(hap.StatsSocket, n, 2*time.Minute)
	if err != nil {
		b.Fatalf("%s %s: %v; log: %s", name, mode, err, fileTail(logPath))
	}
	applied, err = untilPassApplied(logPath, 2*time.Minute)
	if err != nil {
		b.Fatalf("%s %s: %v; log: %s", name, mode, err, fileTail(logPath))
	}
	r2 := reloads() // a new master: its count starts at 0
	logMapWork(b, name+" "+mode+" reboot", logPath)
	b.Logf("%s %s: HAProxy and the controller started together from the last run's files at %d Services: HAProxy up %s, every Service served %s, the controller's first pass applied %s after its start; %d reloads (load %s)",
		name, mode, n, up.Sub(t0).Round(10*time.Millisecond), served.Sub(t0).Round(10*time.Millisecond),
		applied.Sub(t0).Round(10*time.Millisecond), r2, loadAvg())
	b.ReportMetric(max(served.Sub(t0), applied.Sub(t0)).Seconds(), mode+"-reboot-s")
	b.ReportMetric(float64(r2), mode+"-reboot-reloads")
}

// logMapWork logs the first applied pass of the controller log at path
// (its "update" line: ops, runtime) and what its passes changed in the
// maps without a reload (entries, maps replaced whole: restart_reload_test.go's
// mapEdits): a restart's map commands.
func logMapWork(b *testing.B, what, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Logf("%s: %v", what, err)
		return
	}
	first := ""
	for _, l := range strings.Split(passLines(string(data)), "\n") {
		if !strings.Contains(l, "err=") {
			first = l
			break
		}
	}
	entries, whole := mapEdits(string(data))
	b.Logf("%s: map entries changed %d, maps replaced whole %d; first applied pass: %s", what, entries, whole, first)
}

// untilPassApplied polls the controller's log at path (text or JSON) until
// a pass applied (an "update" line without an error) and returns when it
// saw it.
func untilPassApplied(path string, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	var off int64
	var rest string
	for time.Now().Before(deadline) {
		if f, err := os.Open(path); err == nil {
			if _, err := f.Seek(off, io.SeekStart); err == nil {
				if data, err := io.ReadAll(f); err == nil {
					off += int64(len(data))
					lines := strings.Split(rest+string(data), "\n")
					rest = lines[len(lines)-1]
					for _, l := range lines[:len(lines)-1] {
						if (strings.Contains(l, "msg=update") || strings.Contains(l, `"msg":"update"`)) &&
							!strings.Contains(l, "err=") && !strings.Contains(l, `"err":`) {
							f.Close()
							return time.Now(), nil
						}
					}
				}
			}
			f.Close()
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	return time.Time{}, fmt.Errorf("no pass applied within %s", timeout)
}
