package controller

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/cputime"
)

// BenchmarkNewServicePass: the controller's part of the pass that takes a
// new Service with its EndpointSlice at 10,000 Services (issue 29), up to
// the driver (one that does nothing), in BenchmarkFirstPass's world: the
// caches listed, the desired state from the memo (a delta, delta.go), the
// problems, the last-good writer handed the settings. Each iteration
// creates one more Service in the fake clientset, waits (untimed) until
// the source holds it, and times one pass. It reports the process's CPU
// in the pass and the bytes it allocated (all goroutines: the informers
// are idle by then).
//
//	go test ./internal/controller -run '^$' -bench NewServicePass -benchtime 200x -count 6
func BenchmarkNewServicePass(b *testing.B) {
	const services = 10000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, src := scaleWorld(ctx, b, services)
	drv := &countingDriver{}
	dopts := desired.Options{Defaults: settings.Defaults(), Class: desired.DefaultClass}
	c := New(src, drv, nil, Options{Desired: dopts, LastGoodPath: filepath.Join(b.TempDir(), "last-good-settings.json")})
	if _, err := c.sync(ctx); err != nil {
		b.Fatal(err)
	}
	var cpu time.Duration
	var bytes uint64
	var ms runtime.MemStats
	i := services
	for b.Loop() {
		b.StopTimer()
		createScaleService(ctx, b, client, i)
		i++
		for deadline := time.Now().Add(10 * time.Second); ; { // bounded: the informers deliver within ms
			svcs, eps, _ := src.Snapshot()
			if len(svcs) == i && len(eps) == i {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("the source holds %d Services and %d slices, want %d", len(svcs), len(eps), i)
			}
			time.Sleep(time.Millisecond) // poll interval
		}
		runtime.ReadMemStats(&ms)
		a0, c0 := ms.TotalAlloc, cputime.Used()
		b.StartTimer()
		if _, err := c.sync(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += cputime.Used() - c0
		runtime.ReadMemStats(&ms)
		bytes += ms.TotalAlloc - a0
		b.StartTimer()
	}
	if got := len(c.lastGood); got != i {
		b.Fatalf("%d Services configured, want %d", got, i)
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(bytes)/float64(b.N), "pass-B/op")
}
