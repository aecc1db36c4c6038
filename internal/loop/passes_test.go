package loop

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// passLog records what a PassWatcher is told, and the turns between.
type passLog struct {
	mu     sync.Mutex
	events []string
}

func (l *passLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *passLog) PassStarted() { l.add("started") }
func (l *passLog) PassEnded()   { l.add("ended") }

// TestPassesToldAroundEachTurn: Options.Passes is told a turn started
// before it runs and ended after it, for every turn, the failed and the
// put off too (the cli's collector runs only in the quiet between passes,
// internal/quietgc).
func TestPassesToldAroundEachTurn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	log := &passLog{}
	l := New(Options{Name: "test-passes", BaseDelay: time.Millisecond, MaxDelay: 10 * time.Millisecond, Passes: log})
	outcomes := []Outcome{{Err: errors.New("fails")}, {Later: true, After: time.Millisecond}, {}}
	turns := 0
	l.Add("k")
	err := l.Run(ctx, func(context.Context, string) Outcome {
		log.add("turn")
		o := outcomes[turns]
		turns++
		if turns == len(outcomes) {
			cancel()
		}
		return o
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v after %d turns", err, turns)
	}
	want := slices.Repeat([]string{"started", "turn", "ended"}, len(outcomes))
	if !slices.Equal(log.events, want) {
		t.Fatalf("told %v, want %v", log.events, want)
	}
}
