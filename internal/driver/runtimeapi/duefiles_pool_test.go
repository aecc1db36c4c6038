package runtimeapi

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestPoolFileAfterThePass (issue 29): while Run runs, a pass returns
// without waiting for pool.json's write (a new Service's EndpointSlice
// waited for its object's pass to write it: every other new Service a
// pass's tail later); the one writer (duefiles.go) writes the latest
// bytes right after, and what is due when Run ends is on disk before Run
// returns. A pass after a failed write writes the file itself.
func TestPoolFileAfterThePass(t *testing.T) {
	lb := startPoolLab(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := newPoolWorld(t)
	nodeOf := map[string]int{"be_a": 0, "be_b": 1, "be_c": 0, "be_d": 1}
	if _, err := lb.d.Apply(ctx, w.config([]string{"be_a"}, nodeOf)); err != nil {
		t.Fatal(err)
	}
	pool := PoolFile(lb.cfgPath)
	names := func(be string) bool {
		b, err := os.ReadFile(pool)
		return err == nil && strings.Contains(string(b), `"`+be+`"`)
	}
	if !names("be_a") {
		t.Fatal("pool.json does not name be_a after the first pass (no Run: the pass writes it)")
	}

	rctx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { lb.d.Run(rctx, time.Hour, time.Hour); close(ran) }()
	defer func() { stop(); <-ran }()
	until(t, 10*time.Second, func() bool { lb.d.mu.Lock(); defer lb.d.mu.Unlock(); return lb.d.due.on })

	held, release := make(chan struct{}, 4), make(chan struct{})
	hook := func() { held <- struct{}{}; <-release }
	testHookDueWrite.Store(&hook)
	defer testHookDueWrite.Store(nil)
	applied := make(chan error, 1)
	go func() {
		_, err := lb.d.Apply(ctx, w.config([]string{"be_a", "be_b"}, nodeOf))
		applied <- err
	}()
	select {
	case err := <-applied:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the pass did not return while the files' write was held: it waits for the files")
	}
	if names("be_b") {
		t.Error("pool.json names be_b while its write is held")
	}
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer did not start the files' write after the pass")
	}
	testHookDueWrite.Store(nil)
	close(release)
	until(t, 10*time.Second, func() bool { return names("be_b") })

	// A failed write: the next pass writes what is due itself (its error
	// would go to the workqueue); once nothing is due, passes leave their
	// files to the writer again.
	last, err := os.ReadFile(pool)
	if err != nil {
		t.Fatal(err)
	}
	lb.d.mu.Lock()
	lb.d.dueFailed(map[string]dueFile{pool: {body: last, what: "backend pool"}})
	later := lb.d.due.later()
	lb.d.mu.Unlock()
	if later {
		t.Fatal("after a failed write, passes still leave their files to the writer")
	}
	if _, err := lb.d.Apply(ctx, w.config([]string{"be_a", "be_b", "be_d"}, nodeOf)); err != nil {
		t.Fatal(err)
	}
	lb.d.mu.Lock()
	later = lb.d.due.later()
	lb.d.mu.Unlock()
	if !later {
		t.Error("after the pass that wrote what was due, passes do not leave their files to the writer")
	}
	until(t, 10*time.Second, func() bool { return names("be_d") })

	// What is due when Run ends is written before it returns.
	if _, err := lb.d.Apply(ctx, w.config([]string{"be_a", "be_b", "be_c", "be_d"}, nodeOf)); err != nil {
		t.Fatal(err)
	}
	stop()
	<-ran
	if !names("be_c") {
		t.Error("pool.json does not name be_c once Run returned")
	}
}

// until polls cond every millisecond until it holds or d passed.
func until(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(time.Millisecond) { // poll interval
		if time.Now().After(deadline) {
			t.Fatal("condition not met within", d)
		}
	}
}
