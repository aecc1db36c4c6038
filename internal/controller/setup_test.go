package controller

import (
	"context"
	"reflect"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

// testController is the tests' controller: drv driven from a source over
// client (nil: an empty fake clientset), with opts; opts.Desired left
// zero is the default settings for the Services of the default class.
// Its caches are not started: Run starts them, or syncCaches.
func testController(client kubernetes.Interface, drv driver.Driver, opts Options) (*Controller, *source.Source) {
	if client == nil {
		client = fake.NewSimpleClientset()
	}
	if reflect.ValueOf(opts.Desired).IsZero() {
		opts.Desired = desired.Options{Defaults: settings.Defaults(), Class: desired.DefaultClass}
	}
	src := source.New(client, "")
	return New(src, drv, nil, opts), src
}

// syncCaches starts src's informers under ctx and fails the test unless
// their caches synced within a minute.
func syncCaches(ctx context.Context, t *testing.T, src *source.Source) {
	t.Helper()
	if err := src.Start(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
}
