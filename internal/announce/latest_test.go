package announce

import (
	"sync"
	"testing"
)

// TestLatest: Put never blocks, the taker gets the newest value, also
// with many putters at once.
func TestLatest(t *testing.T) {
	l := NewLatest[int]()
	for i := range 5 {
		l.Put(i)
	}
	if v := <-l.C(); v != 4 {
		t.Fatalf("took %d, want the newest, 4", v)
	}
	select {
	case v := <-l.C():
		t.Fatalf("took %d from an empty mailbox", v)
	default:
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				l.Put(i)
			}
		}()
	}
	wg.Wait()
	l.Put(99)
	if v := <-l.C(); v != 99 {
		t.Fatalf("took %d, want 99", v)
	}
}
