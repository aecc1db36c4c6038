package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
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
