package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/loop"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

type countingDriver struct{ calls int }

func (d *countingDriver) Apply(context.Context, model.Config) (driver.Result, error) {
	d.calls++
	return driver.Result{}, nil
}

// Each problem becomes one Event while it persists; a changed message is
// reported again, and a problem that went away can be reported anew.
func TestReportDeduplicates(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	c := New(nil, &countingDriver{}, rec, Options{})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	p := desired.Problem{Service: svc, Reason: desired.ReasonPortConflict, Message: "port 80 taken"}
	c.report([]desired.Problem{p})
	c.report([]desired.Problem{p})
	p2 := p
	p2.Message = "port 81 taken"
	c.report([]desired.Problem{p2})
	c.report(nil)
	c.report([]desired.Problem{p2})
	if got := len(rec.Events); got != 3 {
		t.Fatalf("%d events, want 3", got)
	}
}

// A replica that does not lead reports nothing (Options.Leading, told
// explicitly, not found in the recorder); once it leads it reports what
// remains.
func TestReportOnlyWhileLeading(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	leading := false
	c := New(nil, &countingDriver{}, rec, Options{Leading: func() bool { return leading }})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	p := desired.Problem{Service: svc, Reason: desired.ReasonPortConflict, Message: "port 80 taken"}
	c.report([]desired.Problem{p})
	if got := len(rec.Events); got != 0 {
		t.Fatalf("%d events while not leading, want 0", got)
	}
	leading = true
	c.report([]desired.Problem{p})
	if got := len(rec.Events); got != 1 {
		t.Fatalf("%d events once leading, want 1", got)
	}
}

// A pass never runs against caches that have not synced.
func TestSyncRefusesUnsyncedCache(t *testing.T) {
	drv := &countingDriver{}
	src := source.New(fake.NewSimpleClientset(), "")
	c := New(src, drv, nil, Options{Desired: desired.Options{Defaults: settings.Defaults()}})
	if _, err := c.sync(context.Background()); err == nil {
		t.Fatal("sync ran on an unsynced cache")
	}
	if drv.calls != 0 {
		t.Fatalf("driver called %d times", drv.calls)
	}
}

// verifyingDriver counts Verify calls; drift is what they report.
type verifyingDriver struct {
	countingDriver
	mu       sync.Mutex
	verifies int
	drift    bool
}

func (d *verifyingDriver) Verify(context.Context) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.verifies++
	return d.drift, nil
}

func (d *verifyingDriver) Invalidate() { panic("resync must verify, not invalidate") }

// Every resync period the driver verifies HAProxy's state and a pass
// follows, drift or not.
func TestResyncVerifiesThenTriggers(t *testing.T) {
	for _, drift := range []bool{false, true} {
		t.Run(fmt.Sprint("drift=", drift), func(t *testing.T) {
			drv := &verifyingDriver{drift: drift}
			c := New(nil, drv, nil, Options{ResyncPeriod: 10 * time.Millisecond})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go driver.Resync(ctx, c.drv, c.opts.ResyncPeriod, c.log, c.opts.Metrics.Drift, c.Trigger)
			got := make(chan string, 1)
			go c.loop.Run(ctx, func(_ context.Context, key string) loop.Outcome { // until a pass is asked for
				select {
				case got <- key:
				default:
				}
				return loop.Outcome{}
			})
			select {
			case key := <-got:
				if key != syncKey {
					t.Fatalf("queue gave %q", key)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no pass asked for")
			}
			drv.mu.Lock()
			defer drv.mu.Unlock()
			if drv.verifies == 0 {
				t.Fatal("a pass was asked for before any Verify")
			}
		})
	}
}

// changeDriver records the change time each pass carries.
type changeDriver struct{ seen []time.Time }

func (d *changeDriver) Apply(ctx context.Context, _ model.Config) (driver.Result, error) {
	d.seen = append(d.seen, driver.ChangedAt(ctx))
	return driver.Result{}, nil
}

// A pass tells the driver when the first change it carries was seen (the
// reload settle time counts from there), and a pass with no new change
// tells it nothing.
func TestPassCarriesFirstChangeTime(t *testing.T) {
	drv := &changeDriver{}
	src := source.New(fake.NewSimpleClientset(), "")
	c := New(src, drv, nil, Options{Desired: desired.Options{Defaults: settings.Defaults()}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := src.Start(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	c.Trigger()
	after := time.Now()
	c.Trigger() // a later change of the same pass
	for range 2 {
		if _, err := c.sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(drv.seen) != 2 {
		t.Fatalf("%d passes", len(drv.seen))
	}
	if first := drv.seen[0]; first.Before(before.Truncate(0)) || first.After(after) {
		t.Errorf("first pass carries %v, want the first trigger's time in [%v, %v]", first, before, after)
	}
	if !drv.seen[1].IsZero() {
		t.Errorf("a pass with no new change carries %v, want none", drv.seen[1])
	}
}
