package runtimeapi

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// workerRSS is the resident memory of HAProxy's worker, in MiB.
func workerRSS(b *testing.B, d *HAProxy) float64 {
	b.Helper()
	info, err := d.rt.ShowInfo(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	st, err := os.ReadFile("/proc/" + info["Pid"] + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return float64(kb) / 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// BenchmarkCertificates: HKS_BENCH_CERTS (1,000) certificates (ECDSA
// P-256, each with its intermediate) added to a running HAProxy in one
// pass, with no reload; then 20 rotations of one of them, each timed from
// the pass's start to the first handshake that gets the new certificate;
// then a restart of HAProxy, which loads them all from the files; then, as
// the baseline, 3 rotations the way a template-based controller makes
// them (the file rewritten, a reload). Prints the times, the rotation
// latency p50/p99 and the worker's RSS.
//
//	go test -run '^$' -bench BenchmarkCertificates -benchtime 1x ./internal/driver/runtimeapi/
func BenchmarkCertificates(b *testing.B) {
	n := benchCount("HKS_BENCH_CERTS", 1000) // throughput_bench_test.go
	for b.Loop() {
		l := startLab(b)
		w := newTLSWorld(b)
		ctx := context.Background()
		_, first := w.issue(testcert.ECDSA, "default.example")
		if _, err := l.d.Apply(ctx, w.config(first.Name, first)); err != nil {
			b.Fatal(err)
		}
		base, rss0 := l.reloads(ctx, b), workerRSS(b, l.d)
		all := []model.Certificate{first}
		for i := range n {
			_, c := w.issue(testcert.ECDSA, fmt.Sprintf("c%04d.example", i))
			all = append(all, c)
		}
		slices.SortFunc(all, func(a, b model.Certificate) int { return strings.Compare(a.Name, b.Name) })
		t := time.Now()
		res, err := l.d.Apply(ctx, w.config(first.Name, all...))
		if err != nil || res.Reloaded {
			b.Fatalf("adding %d certificates: reloaded %v, %v", n, res.Reloaded, err)
		}
		add := time.Since(t)
		rss1 := workerRSS(b, l.d)

		// Rotations of one certificate, timed to the first handshake
		// that gets the new one.
		const rotations = 20
		var lat []time.Duration
		name := "c0007.example"
		idx := slices.IndexFunc(all, func(c model.Certificate) bool { return c.Name == model.Name("cert", "default", name) })
		var leaf *x509.Certificate
		for range rotations {
			var next model.Certificate
			leaf, next = w.issue(testcert.ECDSA, name)
			all[idx] = next
			t := time.Now()
			if _, err := l.d.Apply(ctx, w.config(first.Name, all...)); err != nil {
				b.Fatal(err)
			}
			for deadline := t.Add(5 * time.Second); ; {
				got, _, err := w.hello(name, true)
				if err == nil && got.Equal(leaf) {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("rotation not served within 5 s (%v)", err)
				}
			}
			lat = append(lat, time.Since(t))
		}
		if got := l.reloads(ctx, b); got != base {
			b.Fatalf("%d reloads", got-base)
		}
		slices.Sort(lat)

		t = time.Now()
		l.p.Restart(b)
		l.d.Invalidate()
		untilLeaf(b, w, name, leaf)
		restart := time.Since(t)
		rss2 := workerRSS(b, l.d)

		// The baseline, as a template-based controller rotates: the
		// file rewritten, then a reload, whose new worker loads every
		// certificate again.
		var viaReload []time.Duration
		for range 3 {
			var next model.Certificate
			leaf, next = w.issue(testcert.ECDSA, name)
			t := time.Now()
			if err := os.WriteFile(render.CertFile(l.d.opts.Render.CertDir, next.Name), next.PEM, 0o600); err != nil {
				b.Fatal(err)
			}
			if err := l.d.master.Reload(ctx); err != nil {
				b.Fatal(err)
			}
			l.d.rt.Reset()
			untilLeaf(b, w, name, leaf)
			viaReload = append(viaReload, time.Since(t))
		}
		slices.Sort(viaReload)

		b.ReportMetric(add.Seconds(), "add-s")
		b.ReportMetric(viaReload[1].Seconds(), "reload-rotate-p50-s")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "rotate-p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "rotate-p99-ms")
		b.ReportMetric(restart.Seconds(), "restart-s")
		b.ReportMetric(rss0, "rss-1cert-MiB")
		b.ReportMetric(rss1, "rss-added-MiB")
		b.ReportMetric(rss2, "rss-restarted-MiB")
		b.Logf("%d certificates: added in %s with no reload; rotation p50 %s p99 %s (through a reload instead: %s); restart serving in %s; worker RSS %.1f -> %.1f MiB (%.1f after restart)",
			n, add.Round(time.Millisecond), lat[len(lat)/2].Round(time.Microsecond), lat[len(lat)*99/100].Round(time.Microsecond),
			viaReload[1].Round(time.Millisecond), restart.Round(time.Millisecond), rss0, rss1, rss2)
	}
}

// untilLeaf waits until a client naming name gets want.
func untilLeaf(b *testing.B, w *tlsWorld, name string, want *x509.Certificate) {
	b.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		leaf, _, err := w.hello(name, true)
		if err == nil && leaf.Equal(want) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s not served within 10 s (%v)", name, err)
		}
	}
}
