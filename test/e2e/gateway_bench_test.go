package e2e

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/gwcrd"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// benchController starts `init`, a real HAProxy and `run` with args on
// it, in a directory of its own, and returns its log.
func benchController(b *testing.B, kube *kubeapi.Server, args ...string) *haproxytest.LockedBuffer {
	_, log := benchControllerHAProxy(b, kube, args...)
	return log
}

// benchControllerHAProxy is benchController, returning the HAProxy too.
func benchControllerHAProxy(b *testing.B, kube *kubeapi.Server, args ...string) (*haproxytest.Process, *haproxytest.LockedBuffer) {
	return benchControllerFor(b, kube, listening{}, args...)
}

// benchControllerFor is benchControllerHAProxy listening as l: per-port
// frontends on 127.0.0.1, or the fixed listener with a pool of 4 and
// tproxyVIP (in a network namespace of the benchmark's own).
func benchControllerFor(b *testing.B, kube *kubeapi.Server, l listening, args ...string) (*haproxytest.Process, *haproxytest.LockedBuffer) {
	dir := b.TempDir()
	cfg, state := initHAProxyFor(b, dir, l), filepath.Join(dir, "state")
	hap := haproxytest.Start(b, dir, cfg)
	mode := []string{"--bind-address", "127.0.0.1", "--listeners=ports"}
	if l.tproxy {
		mode = []string{"--bind-address", tproxyVIP, "--listeners=tproxy", "--backend-pool=4"}
	}
	all := append(append([]string{"--kubeconfig", kube.KubeconfigPath, "--haproxy-config", cfg, "--haproxy-bin", haproxytest.Bin(),
		"--master-socket", hap.MasterSocket, "--stats-socket", hap.StatsSocket, "--state-file", state,
		"--metrics-address", "", "--udp=off"}, mode...), args...)
	ctx, cancel := context.WithCancel(context.Background())
	log, done := &haproxytest.LockedBuffer{}, make(chan error, 1)
	go func() { done <- cli.Run(ctx, all, func(string) string { return "" }, log) }()
	b.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			b.Errorf("controller did not stop")
		}
	})
	return hap, log
}

// untilServed polls port until the backend answering is want, and
// returns how long after start that was.
func untilServed(port int, want string, start time.Time, deadline time.Duration) (time.Duration, error) {
	return untilServedOn("127.0.0.1", port, want, start, deadline)
}

// untilServedOn is untilServed for connections to addr.
func untilServedOn(addr string, port int, want string, start time.Time, deadline time.Duration) (time.Duration, error) {
	for time.Since(start) < deadline {
		if name, err := lab.Probe(net.JoinHostPort(addr, strconv.Itoa(port)), 500*time.Millisecond); err == nil && name == want {
			return time.Since(start), nil
		}
		time.Sleep(2 * time.Millisecond) // poll interval
	}
	return 0, fmt.Errorf("port %d not served by %s within %s", port, want, deadline)
}

func pct(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s))*p+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

// BenchmarkGatewayChurn: time from a change to traffic served by it, for
// the Gateway API mode against the Services mode, in one run on one
// apiserver (each mode with its own HAProxy, defaults but for the test
// paths): an endpoint change of a Service that is both a LoadBalancer
// Service (--targets=pods) and a TCPRoute's backend (the same write seen
// by both), and a TCPRoute moved to another Service (a reload). Prints
// p50/p99 in milliseconds.
//
//	HKS_TESTBIN_DIR=... go test -run '^$' -bench BenchmarkGatewayChurn -benchtime 1x ./test/e2e/
func BenchmarkGatewayChurn(b *testing.B) {
	if !inNetns(b, podAddrs...) {
		return
	}
	kube := kubeapi.Start(b)
	gwcrd.Install(b, kube.Config)
	client := kube.Client(b)
	gc, err := gwclient.NewForConfig(kube.Config)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i, a := range podAddrs {
		pod := lab.NewNodeServer(fmt.Sprintf("pod-%d", i+1), a)
		if err := pod.Listen(8080); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pod.Close)
	}
	svcPort, gwPort := int32(haproxytest.FreePort(b)), haproxytest.FreePort(b)
	if _, err := lab.CreateService(ctx, client, lab.Service{Namespace: ns, Name: "web", Port: svcPort}); err != nil {
		b.Fatal(err)
	}
	if _, err := client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "other"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "tcp", Port: svcPort, Protocol: corev1.ProtocolTCP}}}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	endpoint := func(svc string, i int) {
		if err := lab.ApplySlice(ctx, client, lab.SliceFor(ns, svc, 8080, []lab.Endpoint{{IP: podAddrs[i], Node: "n1", Ready: true}})); err != nil {
			b.Fatal(err)
		}
	}
	endpoint("web", 0)
	endpoint("other", 2)
	if _, err := gc.GatewayV1().GatewayClasses().Create(ctx, &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "hks"},
		Spec: gwv1.GatewayClassSpec{ControllerName: gateway.ControllerName}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := gc.GatewayV1().Gateways(ns).Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "hks", Listeners: []gwv1.Listener{listener("tcp", gwv1.TCPProtocolType, gwPort, "")}}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	p := gwv1.PortNumber(svcPort)
	route := func(svc string) gwv1.TCPRouteSpec {
		return gwv1.TCPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parentRef("tcp")},
			Rules: []gwv1.TCPRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(svc), Port: &p}}}}}}
	}
	if _, err := gc.GatewayV1().TCPRoutes(ns).Create(ctx, &gwv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: route("web")}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	benchController(b, kube, "--mode=gateway")
	benchController(b, kube, "--targets=pods", "--default-check=false")
	for _, port := range []int{gwPort, int(svcPort)} {
		if _, err := untilServed(port, "pod-1", time.Now(), 30*time.Second); err != nil {
			b.Fatal(err)
		}
	}

	const changes = 40
	var gwEP, svcEP, gwRoute []time.Duration
	for i := range changes {
		to := (i + 1) % 2 // pod-2, pod-1, ...
		start := time.Now()
		endpoint("web", to)
		want := fmt.Sprintf("pod-%d", to+1)
		type res struct {
			d   time.Duration
			err error
		}
		gwc, svcc := make(chan res, 1), make(chan res, 1)
		go func() { d, err := untilServed(gwPort, want, start, 30*time.Second); gwc <- res{d, err} }()
		go func() { d, err := untilServed(int(svcPort), want, start, 30*time.Second); svcc <- res{d, err} }()
		g, s := <-gwc, <-svcc
		if g.err != nil || s.err != nil {
			b.Fatalf("change %d: %v %v", i, g.err, s.err)
		}
		gwEP, svcEP = append(gwEP, g.d), append(svcEP, s.d)
	}
	for i := range changes / 2 {
		svc, want := "other", "pod-3"
		if i%2 == 1 {
			svc, want = "web", "pod-1"
		}
		cur, err := gc.GatewayV1().TCPRoutes(ns).Get(ctx, "r", metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		cur.Spec = route(svc)
		start := time.Now()
		if _, err := gc.GatewayV1().TCPRoutes(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		d, err := untilServed(gwPort, want, start, 30*time.Second)
		if err != nil {
			b.Fatalf("route change %d: %v", i, err)
		}
		gwRoute = append(gwRoute, d)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(pct(gwEP, 0.5)), "gw-endpoint-p50-ms")
	b.ReportMetric(ms(pct(gwEP, 0.99)), "gw-endpoint-p99-ms")
	b.ReportMetric(ms(pct(svcEP, 0.5)), "svc-endpoint-p50-ms")
	b.ReportMetric(ms(pct(svcEP, 0.99)), "svc-endpoint-p99-ms")
	b.ReportMetric(ms(pct(gwRoute, 0.5)), "gw-route-p50-ms")
	b.ReportMetric(ms(pct(gwRoute, 0.99)), "gw-route-p99-ms")
	b.Logf("endpoint change to served, %d changes: Gateway API p50 %s p99 %s; LoadBalancer Service p50 %s p99 %s; TCPRoute moved to another Service, %d changes: p50 %s p99 %s",
		changes, pct(gwEP, 0.5), pct(gwEP, 0.99), pct(svcEP, 0.5), pct(svcEP, 0.99), len(gwRoute), pct(gwRoute, 0.5), pct(gwRoute, 0.99))
}
