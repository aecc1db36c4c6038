package controller

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
)

// BenchmarkPublishStatuses measures how long the Publisher takes to write
// the status of 10,000 LoadBalancer Services into a real kube-apiserver
// (each iteration switches the published address, so every Service is
// written), unthrottled and at the default --status-qps would be 200 s by
// construction. Run with:
//
//	HKS_TESTBIN_DIR=$(hack/testbin.sh | tail -1) go test -run '^$' -bench PublishStatuses -benchtime 2x ./internal/controller
func BenchmarkPublishStatuses(b *testing.B) {
	if os.Getenv("HKS_TESTBIN_DIR") == "" {
		b.Skip("HKS_TESTBIN_DIR not set (hack/testbin.sh)")
	}
	const n = 10000
	kube := kubeapi.Start(b)
	client := kube.Client(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	createServices(b, client, n)
	src := source.New(client, "")
	if err := src.Start(ctx, time.Minute); err != nil {
		b.Fatal(err)
	}
	svcs := src.Services()
	for _, workers := range []int{4, 16} {
		b.Run(fmt.Sprintf("services=%d/workers=%d", n, workers), func(b *testing.B) {
			for i := range b.N {
				addr := netip.AddrFrom4([4]byte{192, 0, 2, byte(workers + i%2)})
				p := NewPublisher(client, src, PublisherOptions{Addresses: []netip.Addr{addr}, Workers: workers})
				rctx, stop := context.WithCancel(ctx)
				start := time.Now()
				p.Served(svcs, nil)
				go p.Run(rctx)
				waitPublished(b, src, addr.String(), n)
				d := time.Since(start)
				stop()
				b.ReportMetric(float64(n)/d.Seconds(), "statuses/s")
				b.ReportMetric(d.Seconds(), "s/10k")
			}
		})
	}
}

func createServices(b *testing.B, client kubernetes.Interface, n int) {
	b.Helper()
	class := "haproxy-k8s-sync.io/lb"
	no := false
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				_, err := client.CoreV1().Services("default").Create(context.Background(), &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%05d", i)},
					Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class,
						AllocateLoadBalancerNodePorts: &no,
						Ports:                         []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
				}, metav1.CreateOptions{})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// waitPublished polls the informer cache until n Services show addr.
func waitPublished(b *testing.B, src *source.Source, addr string, n int) {
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		done := 0
		for _, s := range src.Services() {
			if ing := s.Status.LoadBalancer.Ingress; len(ing) == 1 && ing[0].IP == addr {
				done++
			}
		}
		if done >= n {
			return
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	b.Fatalf("statuses not all published within 10 minutes")
}
