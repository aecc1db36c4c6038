package plan

import (
	"fmt"
	"net/netip"
	"runtime"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

const (
	benchBackends = 10000
	benchSlots    = 8
)

// benchLayout is benchBackends backends of benchSlots slots, six used.
func benchLayout() model.Layout {
	l := make(model.Layout, benchBackends)
	for b := range benchBackends {
		slots := make([]model.Slot, benchSlots)
		for i := range slots {
			slots[i] = model.Slot{Used: i < 6,
				Server: model.Server{Addr: netip.AddrFrom4([4]byte{10, byte(b >> 8), byte(b), byte(i)}), Port: 30000}}
		}
		l[fmt.Sprintf("be_ns%d_svc%d_80", b%50, b)] = slots
	}
	return l
}

// benchRuntime is the runtime state that matches l, built as the driver
// builds it from rows read from HAProxy.
func benchRuntime(l model.Layout) Runtime {
	var b RuntimeBuilder
	for be, slots := range l {
		for i, sl := range slots {
			b.Add(be, model.SlotName(i), Actual{Server: sl.Server, Maint: !sl.Used})
		}
	}
	rt, _ := b.Finish()
	return rt
}

// The memory the runtime state of 10,000 backends x 8 slots keeps alive.
func BenchmarkRuntimeState(b *testing.B) {
	l := benchLayout()
	b.ReportAllocs()
	var heap uint64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rt := benchRuntime(l)
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = after.HeapAlloc - before.HeapAlloc
		runtime.KeepAlive(rt)
	}
	b.ReportMetric(float64(heap), "live-B")
}

// Ops over the 2,500 backends (of 10,000) whose slots changed.
func BenchmarkOpsChanged(b *testing.B) {
	l := benchLayout()
	rt := benchRuntime(l)
	changed := make(model.Layout)
	n := 0
	for be, slots := range l {
		if n == benchBackends/4 {
			break
		}
		n++
		c := append([]model.Slot(nil), slots...)
		c[6].Used, c[6].Server = true, model.Server{Addr: netip.MustParseAddr("10.9.9.9"), Port: 30001}
		changed[be] = c
	}
	b.ReportAllocs()
	for b.Loop() {
		ops, missing := Ops(changed, rt)
		if len(ops) != 2*len(changed) || len(missing) != 0 {
			b.Fatalf("%d ops, %d missing", len(ops), len(missing))
		}
	}
}
