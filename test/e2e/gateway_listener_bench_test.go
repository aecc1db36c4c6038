package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// BenchmarkGatewayNewTCPListener: in tproxy mode with a pool of 4, the
// time from a new Gateway (a TCP listener on a new port of tproxyVIP, its
// TCPRoute to a Service already served) being written to its first
// connection answered through HAProxy, over 10 new Gateways one at a
// time, and the reloads they cost (the master's `show proc`). Prints
// p50/max in milliseconds and the reloads.
//
//	HKS_TESTBIN_DIR=... go test -run '^$' -bench BenchmarkGatewayNewTCPListener -benchtime 1x ./test/e2e/
func BenchmarkGatewayNewTCPListener(b *testing.B) {
	addrs := podAddrs
	if !tproxyMode() {
		addrs = append([]string{tproxyVIP}, podAddrs...) // inNetns adds it in tproxy mode only
	}
	if !inNetns(b, addrs...) {
		return
	}
	kube, client, gc := benchGatewayAPI(b) // httproute_bench_test.go: the class hks too
	ctx := context.Background()
	pod := lab.NewNodeServer("pod-1", podAddrs[0])
	if err := pod.Listen(8080); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pod.Close)
	if _, err := client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "tcp", Port: 80, Protocol: corev1.ProtocolTCP}}}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := lab.ApplySlice(ctx, client, lab.SliceFor(ns, "web", 8080, []lab.Endpoint{{IP: podAddrs[0], Node: "n1", Ready: true}})); err != nil {
		b.Fatal(err)
	}
	ip := gwv1.IPAddressType
	newGateway := func(name string, port int) {
		if _, err := gc.GatewayV1().Gateways(ns).Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: gwv1.GatewaySpec{GatewayClassName: "hks", Addresses: []gwv1.GatewaySpecAddress{{Type: &ip, Value: tproxyVIP}},
				Listeners: []gwv1.Listener{listener("tcp", gwv1.TCPProtocolType, port, "")}}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if _, err := gc.GatewayV1().TCPRoutes(ns).Create(ctx, &gwv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: gwv1.TCPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: gwv1.ObjectName(name)}}},
				Rules: []gwv1.TCPRouteRule{{BackendRefs: []gwv1.BackendRef{backendRef("web", 1)}}}}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	port0 := haproxytest.FreePort(b)
	newGateway("gw-0", port0)
	hap, _ := benchControllerFor(b, kube, listening{tproxy: true}, "--mode=gateway")
	if _, err := untilServedOn(tproxyVIP, port0, "pod-1", time.Now(), 60*time.Second); err != nil {
		b.Fatal(err)
	}
	master := haproxy.NewMaster(hap.MasterSocket)
	reloads := func() int {
		p, err := master.ShowProc(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return p.Reloads
	}
	before := reloads()
	const gateways = 10
	var took []time.Duration
	for i := 1; i <= gateways; i++ {
		port := haproxytest.FreePort(b)
		start := time.Now()
		newGateway(fmt.Sprintf("gw-%d", i), port)
		d, err := untilServedOn(tproxyVIP, port, "pod-1", start, 30*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, d)
	}
	n := reloads() - before
	b.Logf("new Gateway with a TCP listener, first connection answered: p50 %.1f ms, max %.1f ms, %d reloads for %d Gateways",
		ms(pct(took, 0.5)), ms(pct(took, 1)), n, gateways)
	b.ReportMetric(ms(pct(took, 0.5)), "p50-ms")
	b.ReportMetric(ms(pct(took, 1)), "max-ms")
	b.ReportMetric(float64(n), "reloads")
}
