package controller

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

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
	client, src := scaleWorld(ctx, b, services)
	dopts := desired.Options{Defaults: settings.Defaults(), Class: desired.DefaultClass}
	c := New(src, &countingDriver{}, nil, Options{Desired: dopts, LastGoodPath: filepath.Join(b.TempDir(), "last-good-settings.json")})
	if _, err := c.sync(ctx); err != nil {
		b.Fatal(err)
	}
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
