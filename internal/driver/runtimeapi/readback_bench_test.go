package runtimeapi

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/liveheap"
)

// benchDriver applies 10,000 backends of six servers (eight slots each,
// 80,000 slots) to a real HAProxy.
func benchDriver(b *testing.B) (*HAProxy, model.Config) {
	b.Helper()
	d := startLab(b).d
	var cfg model.Config
	for i := range 10000 {
		var servers []model.Server
		for s := range 6 {
			servers = append(servers, model.Server{Addr: netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), byte(s + 1)}), Port: 30000})
		}
		cfg.Backends = append(cfg.Backends, &model.Backend{Name: fmt.Sprintf("be_ns%d_svc%d_80", i%50, i), Balance: "roundrobin", Servers: servers})
	}
	if _, err := d.Apply(context.Background(), cfg); err != nil {
		b.Fatal(err)
	}
	return d, cfg
}

// Reading back the state of 80,000 slots: what it allocates, and what the
// state read keeps alive.
func BenchmarkReadBack(b *testing.B) {
	d, _ := benchDriver(b)
	ctx := context.Background()
	b.ReportAllocs()
	var live int64
	for b.Loop() {
		d.mu.Lock()
		d.actual, d.layout = nil, nil
		live = liveheap.Growth(func() {
			if err := d.readBack(ctx); err != nil {
				b.Fatal(err)
			}
		})
		d.mu.Unlock()
	}
	b.ReportMetric(float64(live), "live-B")
}

// The pass after a resync: what holds the driver's lock.
func BenchmarkResyncPass(b *testing.B) {
	d, cfg := benchDriver(b)
	ctx := context.Background()
	var verify time.Duration
	for b.Loop() {
		b.StopTimer()
		t := time.Now()
		if drift, err := d.Verify(ctx); err != nil || drift {
			b.Fatal(drift, err)
		}
		verify += time.Since(t)
		b.StartTimer()
		if _, err := d.Apply(ctx, cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(verify.Nanoseconds())/float64(b.N), "verify-ns/op")
}
