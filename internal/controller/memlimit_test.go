package controller

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/memlimit"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// limitDriver records Go's soft memory limit when each pass reaches it.
type limitDriver struct{ limits []int64 }

func (d *limitDriver) Apply(context.Context, model.Config) (driver.Result, error) {
	d.limits = append(d.limits, debug.SetMemoryLimit(-1))
	return driver.Result{}, nil
}

// TestMemoryLimitFollowsTheCaches: with Options.MemoryLimit the soft
// memory limit is set from the Services and endpoints the caches hold
// before the pass (the first included: issue 29's peak is at its end),
// and follows them when the cluster grows.
func TestMemoryLimitFollowsTheCaches(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewSimpleClientset()
	add := func(i, endpoints int) {
		name := fmt.Sprintf("svc-%d", i)
		if _, err := client.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "tcp", Port: int32(8000 + i), NodePort: int32(30000 + i), Protocol: corev1.ProtocolTCP}}}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eps := make([]lab.Endpoint, endpoints)
		for j := range eps {
			eps[j] = lab.Endpoint{IP: fmt.Sprintf("10.0.%d.%d", i, j+1), Node: "node-0", Ready: true}
		}
		if _, err := client.DiscoveryV1().EndpointSlices("default").Create(ctx, lab.SliceFor("default", name, 8080, eps), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	add(0, 2)
	add(1, 3)
	// A model whose prediction is far above this test's live heap: the
	// limit is the prediction.
	m := memlimit.Model{Base: 1 << 30, PerService: 1 << 20, PerEndpoint: 1 << 10}
	drv := &limitDriver{}
	c, src := testController(client, drv, Options{MemoryLimit: memlimit.New(m, slog.New(slog.DiscardHandler))})
	syncCaches(ctx, t, src)
	if _, err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	add(2, 4)
	deadline := time.Now().Add(30 * time.Second)
	for svcs, eps, _ := src.Snapshot(); len(svcs) < 3 || len(eps) < 3; svcs, eps, _ = src.Snapshot() {
		if time.Now().After(deadline) {
			t.Fatal("the third Service and its EndpointSlice not in the cache within 30 s")
		}
		time.Sleep(10 * time.Millisecond) // polling the cache, with a deadline
	}
	if _, err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	want := []int64{1<<30 + 2<<20 + 5<<10, 1<<30 + 3<<20 + 9<<10}
	if fmt.Sprint(drv.limits) != fmt.Sprint(want) {
		t.Fatalf("limits at the driver %v, want %v", drv.limits, want)
	}
}
