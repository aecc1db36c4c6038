package controller

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

// TestOnSyncedBeforeTheFirstPass: Options.OnSynced is called once, when
// the caches synced and before the first pass reaches the driver (the
// cli pages out there what the lists touched: issue 29's peak comes at
// the end of the first pass).
func TestOnSyncedBeforeTheFirstPass(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	drv := &countingDriver{}
	var calls, passesThen atomic.Int32
	synced := make(chan bool, 1)
	var src *source.Source
	c, src := testController(nil, drv, Options{SyncTimeout: time.Minute, OnSynced: func() {
		passesThen.Store(int32(drv.calls))
		if calls.Add(1) == 1 {
			synced <- src.Synced()
		}
	}})
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	select {
	case ok := <-synced:
		if !ok {
			t.Fatal("OnSynced called before the caches synced")
		}
	case err := <-done:
		t.Fatalf("Run ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("OnSynced not called within 30 s of the start")
	}
	if n := passesThen.Load(); n != 0 {
		t.Errorf("OnSynced called after %d passes reached the driver, want before the first", n)
	}
	cancel()
	<-done
	if n := calls.Load(); n != 1 {
		t.Errorf("OnSynced called %d times, want 1", n)
	}
}

// failingFirstDriver fails its first Apply and applies every later one.
type failingFirstDriver struct{ calls atomic.Int32 }

func (d *failingFirstDriver) Apply(context.Context, model.Config) (driver.Result, error) {
	if d.calls.Add(1) == 1 {
		return driver.Result{}, errors.New("first pass fails")
	}
	return driver.Result{}, nil
}

// TestOnAppliedOnceAfterTheFirstApply: Options.OnApplied is called once,
// after the first pass the driver applied (not after one that failed),
// and not again (the cli pages out there what the start-up's work
// touched: issue 29's peak comes right after that pass).
func TestOnAppliedOnceAfterTheFirstApply(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	drv := &failingFirstDriver{}
	var calls, passesThen atomic.Int32
	c, _ := testController(nil, drv, Options{SyncTimeout: time.Minute, OnApplied: func() {
		passesThen.Store(drv.calls.Load())
		calls.Add(1)
	}})
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for drv.calls.Load() < 4 && time.Now().Before(deadline) {
		c.Trigger()
		time.Sleep(5 * time.Millisecond) // poll interval
	}
	cancel()
	<-done
	if n := drv.calls.Load(); n < 4 {
		t.Fatalf("%d passes reached the driver within 30 s, want 4", n)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("OnApplied called %d times, want 1", n)
	}
	if n := passesThen.Load(); n != 2 {
		t.Errorf("OnApplied called after pass %d, want after the second (the first failed)", n)
	}
}
