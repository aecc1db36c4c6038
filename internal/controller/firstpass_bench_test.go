package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/cputime"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// BenchmarkFirstPass: the controller's part of a start's first pass, up
// to the driver, in BenchmarkServicesScaleNew's world (test/e2e: 10,000
// LoadBalancer Services, externalTrafficPolicy Local, 5 ready endpoints
// each over 20 Nodes) held by a fake clientset: the desired state
// computed from the caches (a fresh controller each time: no memo) with
// run's last-good file, and handed to a driver that does nothing. It
// reports the pass's wall time and the process's CPU in it (cpu-ms/op);
// the file, when the controller writes it on the pass's path, is part of
// both.
//
//	go test ./internal/controller -run '^$' -bench FirstPass -benchtime 10x -count 3
func BenchmarkFirstPass(b *testing.B) {
	const services = 10000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, src := scaleWorld(ctx, b, services)
	dopts := desired.Options{Defaults: settings.Defaults(), Class: desired.DefaultClass}
	var last int
	var cpu time.Duration
	for b.Loop() {
		drv := &countingDriver{}
		c := New(src, drv, nil, Options{Desired: dopts, LastGoodPath: filepath.Join(b.TempDir(), "last-good-settings.json")})
		c0 := cputime.Used()
		res, err := c.sync(ctx)
		cpu += cputime.Used() - c0
		if err != nil || drv.calls != 1 {
			b.Fatalf("pass: %v, %d applies (%v)", err, drv.calls, res)
		}
		last = len(c.lastGood)
	}
	if last != services {
		b.Fatalf("%d Services configured, want %d", last, services)
	}
	// The process's CPU in the pass (the informers are idle by then):
	// less noisy than the wall time on a shared machine.
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}

// scaleWorld is BenchmarkServicesScaleNew's world (test/e2e) of n
// Services in a fake clientset, and a source over it, synced.
func scaleWorld(ctx context.Context, b *testing.B, n int) (*fake.Clientset, *source.Source) {
	const nodes = 20
	client := fake.NewSimpleClientset()
	for node := range nodes {
		if err := lab.CreateNode(ctx, client, fmt.Sprintf("node-%02d", node), fmt.Sprintf("127.77.0.%d", node+1), true); err != nil {
			b.Fatal(err)
		}
	}
	for i := range n {
		createScaleService(ctx, b, client, i)
	}
	src := source.New(client, "")
	if err := src.Start(ctx, time.Minute); err != nil {
		b.Fatal(err)
	}
	return client, src
}

// createScaleService creates the world's Service i (svc-%05d) and its
// EndpointSlice of 5 ready endpoints over the 20 nodes.
func createScaleService(ctx context.Context, b *testing.B, client *fake.Clientset, i int) {
	createScaleObject(ctx, b, client, i)
	createScaleSlice(ctx, b, client, i)
}

// createScaleObject creates the world's Service i alone.
func createScaleObject(ctx context.Context, b *testing.B, client *fake.Clientset, i int) {
	class := desired.DefaultClass
	name := fmt.Sprintf("svc-%05d", i)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, CreationTimestamp: metav1.NewTime(time.Unix(int64(i), 0))},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class,
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal, HealthCheckNodePort: int32(40000 + i%20000),
			Ports: []corev1.ServicePort{{Name: "tcp", Port: int32(10000 + i), NodePort: int32(30000 + i%20000), Protocol: corev1.ProtocolTCP}}}}
	if _, err := client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
}

// createScaleSlice creates the EndpointSlice of the world's Service i.
func createScaleSlice(ctx context.Context, b *testing.B, client *fake.Clientset, i int) {
	const endpoints, nodes = 5, 20
	name := fmt.Sprintf("svc-%05d", i)
	eps := make([]lab.Endpoint, endpoints)
	for j := range eps {
		k := i*16 + j + 1
		eps[j] = lab.Endpoint{IP: fmt.Sprintf("10.%d.%d.%d", (k>>16)&255, (k>>8)&255, k&255), Node: fmt.Sprintf("node-%02d", (i+j)%nodes), Ready: true}
	}
	if _, err := client.DiscoveryV1().EndpointSlices("default").Create(ctx, lab.SliceFor("default", name, 8080, eps), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
}
