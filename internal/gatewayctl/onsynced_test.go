package gatewayctl

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

// failingFirstDriver fails its first Apply and applies every later one.
type failingFirstDriver struct{ calls atomic.Int32 }

func (d *failingFirstDriver) Apply(context.Context, model.Config) (driver.Result, error) {
	if d.calls.Add(1) == 1 {
		return driver.Result{}, errors.New("first pass fails")
	}
	return driver.Result{}, nil
}

// TestOnSyncedAndOnApplied: Options.OnSynced is called once, when the
// caches synced and before the first pass reaches the driver;
// Options.OnApplied once, after the first pass the driver applied (not
// after one that failed), and not again. The cli pages out the
// executable's pages there, as in the Services mode (issue 29's peak).
func TestOnSyncedAndOnApplied(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := source.NewGateway(fake.NewClientset(), gwfake.NewSimpleClientset(), false, map[string]string{})
	drv := &failingFirstDriver{}
	var synced, applied, passesAtSync, passesAtApply atomic.Int32
	var syncedOK atomic.Bool
	l := New(src, drv, Options{SyncTimeout: time.Minute, Logger: slog.New(slog.DiscardHandler),
		OnSynced: func() {
			passesAtSync.Store(drv.calls.Load())
			syncedOK.Store(src.Synced())
			synced.Add(1)
		},
		OnApplied: func() {
			passesAtApply.Store(drv.calls.Load())
			applied.Add(1)
		}})
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for drv.calls.Load() < 4 && time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("Run ended: %v", err)
		default:
		}
		l.Trigger()
		time.Sleep(5 * time.Millisecond) // poll interval
	}
	cancel()
	<-done
	if n := drv.calls.Load(); n < 4 {
		t.Fatalf("%d passes reached the driver within 30 s, want 4", n)
	}
	if n := synced.Load(); n != 1 {
		t.Errorf("OnSynced called %d times, want 1", n)
	}
	if !syncedOK.Load() || passesAtSync.Load() != 0 {
		t.Errorf("OnSynced called with the caches synced %v, after %d passes; want synced, before the first", syncedOK.Load(), passesAtSync.Load())
	}
	if n := applied.Load(); n != 1 {
		t.Errorf("OnApplied called %d times, want 1", n)
	}
	if n := passesAtApply.Load(); n != 2 {
		t.Errorf("OnApplied called after pass %d, want after the second (the first failed)", n)
	}
}
