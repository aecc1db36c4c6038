package controller

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
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
	client, src, c := newPassWorld(ctx, b, services)
	var cpu time.Duration
	var bytes uint64
	var ms runtime.MemStats
	i := services
	for b.Loop() {
		b.StopTimer()
		createScaleService(ctx, b, client, i)
		i++
		waitScaleSource(b, src, i, i)
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

// BenchmarkNewServiceObjectPass: a new Service as the cluster makes it
// at 10,000 Services (issue 29), two passes: its object's (the Service
// alone: a frontend and a backend with no server), then its
// EndpointSlice's (its servers). The slice arrives while the object's
// pass still runs, so the object's pass is what the new Service waits
// for. In BenchmarkNewServicePass's world, up to the driver (one that
// does nothing); each pass untimed but for itself. It reports the bytes
// each pass allocated (all goroutines: the informers are idle by then).
//
//	go test ./internal/controller -run '^$' -bench NewServiceObjectPass -benchtime 100x -count 6
func BenchmarkNewServiceObjectPass(b *testing.B) {
	const services = 10000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client, src, c := newPassWorld(ctx, b, services)
	var object, slice uint64
	var ms runtime.MemStats
	pass := func(bytes *uint64) {
		runtime.ReadMemStats(&ms)
		a0 := ms.TotalAlloc
		b.StartTimer()
		if _, err := c.sync(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		runtime.ReadMemStats(&ms)
		*bytes += ms.TotalAlloc - a0
	}
	i := services
	for b.Loop() {
		b.StopTimer()
		createScaleObject(ctx, b, client, i)
		waitScaleSource(b, src, i+1, i)
		pass(&object)
		createScaleSlice(ctx, b, client, i)
		waitScaleSource(b, src, i+1, i+1)
		pass(&slice)
		i++
		b.StartTimer()
	}
	if got := len(c.lastGood); got != i {
		b.Fatalf("%d Services configured, want %d", got, i)
	}
	b.ReportMetric(float64(object)/float64(b.N), "object-B/op")
	b.ReportMetric(float64(slice)/float64(b.N), "slice-B/op")
}

// newPassWorld is scaleWorld's n Services and a controller over them
// whose driver does nothing, after its first pass.
func newPassWorld(ctx context.Context, b *testing.B, n int) (*fake.Clientset, *source.Source, *Controller) {
	client, src := scaleWorld(ctx, b, n)
	dopts := desired.Options{Defaults: settings.Defaults(), Class: desired.DefaultClass}
	c := New(src, &countingDriver{}, nil, Options{Desired: dopts, LastGoodPath: filepath.Join(b.TempDir(), "last-good-settings.json")})
	if _, err := c.sync(ctx); err != nil {
		b.Fatal(err)
	}
	return client, src, c
}

// waitScaleSource waits (bounded: the informers deliver within ms) until
// the source holds svcs Services and slices EndpointSlices.
func waitScaleSource(b *testing.B, src *source.Source, svcs, slices int) {
	for deadline := time.Now().Add(10 * time.Second); ; {
		s, e, _ := src.Snapshot()
		if len(s) == svcs && len(e) == slices {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the source holds %d Services and %d slices, want %d and %d", len(s), len(e), svcs, slices)
		}
		time.Sleep(time.Millisecond) // poll interval
	}
}
