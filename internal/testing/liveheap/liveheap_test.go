package liveheap

import (
	"runtime"
	"testing"
)

// TestGrowth: what f keeps reachable counts, what it drops does not, and
// what f frees counts below zero.
func TestGrowth(t *testing.T) {
	const size = 8 << 20
	var kept []byte
	for _, c := range []struct {
		name     string
		f        func()
		min, max int64
	}{
		{"kept", func() { kept = make([]byte, size) }, size - size/4, size + size/4}, // the runtime frees a few bytes of its own meanwhile
		{"dropped", func() { _ = make([]byte, size) }, -size / 4, size / 4},
		{"freed", func() { kept = nil }, -size - size/4, -size + size/4},
	} {
		got := Growth(c.f)
		runtime.KeepAlive(kept)
		if got < c.min || got > c.max {
			t.Errorf("%s: grew %d bytes, want within [%d, %d]", c.name, got, c.min, c.max)
		}
	}
}
