package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

// TestOnSyncedBeforeTheFirstPass: Options.OnSynced is called once, when
// the caches synced and before the first pass reaches the driver (the
// cli pages out there what the lists touched: issue 29's peak comes at
// the end of the first pass).
func TestOnSyncedBeforeTheFirstPass(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := source.New(fake.NewSimpleClientset(), "")
	drv := &countingDriver{}
	var calls, passesThen atomic.Int32
	synced := make(chan bool, 1)
	c := New(src, drv, nil, Options{Desired: desired.Options{Defaults: settings.Defaults(), Class: desired.DefaultClass},
		SyncTimeout: time.Minute, OnSynced: func() {
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
