// Package liveheap tells tests and benchmarks how much heap stays live:
// what a memo, a cache or a pass keeps, as opposed to what it allocates
// (testing.AllocsPerRun, MemStats.TotalAlloc).
package liveheap

import "runtime"

// Now is the heap live after two full collections (MemStats.HeapAlloc):
// the second frees what the first only moved aside (a sync.Pool's
// victims, objects finalizers kept for a cycle).
func Now() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// Growth is how much more heap is live after f than before it (Now
// each side); negative when f freed more than it kept. What f keeps
// must still be reachable when Growth returns (assigned to a variable
// of the caller's that a runtime.KeepAlive after the call reads), or the
// second measure frees it.
func Growth(f func()) int64 {
	before := Now()
	f()
	return int64(Now()) - int64(before)
}
