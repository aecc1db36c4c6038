package main

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// The pool of ready backends (--backend-pool, issue 29) in the gateway
// benchmark: the new-backend phase again, on a gateway-mode controller
// with a pool, after the one without (the two cannot serve one Gateway at
// once), in the same run on the same objects. With -gateway-scale N the
// cluster holds N more routed backends (N Services, each the one backend
// of a TCPRoute on a listener of its own, 64 listeners a Gateway), so
// that a reload costs what it costs at that size.

// poolSpares is the --backend-pool of the pool run.
const poolSpares = 16

// createScale writes the N routed backends: Services scale-i (endpoint on
// pod-3), Gateways scale-g with 64 TCP listeners each, from port base,
// and TCPRoutes scale-i. It returns the last listener's port.
func (w *gwWorld) createScale(n, base int) (last int, err error) {
	for i := range n {
		name := "scale-" + strconv.Itoa(i)
		if _, err := w.client.CoreV1().Services(gwNS).Create(w.ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "tcp", Port: w.svcPort, Protocol: corev1.ProtocolTCP}}}}, metav1.CreateOptions{}); err != nil {
			return 0, err
		}
		if err := lab.ApplySlice(w.ctx, w.client, lab.SliceFor(gwNS, name, 8080, []lab.Endpoint{{IP: gwPods[2], Node: "n1", Ready: true}})); err != nil {
			return 0, err
		}
	}
	for g := 0; g*64 < n; g++ {
		var ls []gwv1.Listener
		for i := g * 64; i < min(n, (g+1)*64); i++ {
			ls = append(ls, gwv1.Listener{Name: gwv1.SectionName("l" + strconv.Itoa(i)), Protocol: gwv1.TCPProtocolType, Port: gwv1.PortNumber(base + i)})
		}
		if _, err := w.gc.GatewayV1().Gateways(gwNS).Create(w.ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "scale-" + strconv.Itoa(g)},
			Spec: gwv1.GatewaySpec{GatewayClassName: "hks", Listeners: ls}}, metav1.CreateOptions{}); err != nil {
			return 0, err
		}
	}
	p := gwv1.PortNumber(w.svcPort)
	for i := range n {
		section := gwv1.SectionName("l" + strconv.Itoa(i))
		weight := int32(1)
		spec := gwv1.TCPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: gwv1.ObjectName("scale-" + strconv.Itoa(i/64)), SectionName: &section}}},
			Rules: []gwv1.TCPRouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{
				Name: gwv1.ObjectName("scale-" + strconv.Itoa(i)), Port: &p}, Weight: &weight}}}}}
		if _, err := w.gc.GatewayV1().TCPRoutes(gwNS).Create(w.ctx, &gwv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Name: "scale-" + strconv.Itoa(i)}, Spec: spec},
			metav1.CreateOptions{}); err != nil {
			return 0, err
		}
	}
	return base + n - 1, nil
}

// poolRun runs the new-backend phase on a gateway-mode controller with
// --backend-pool, started in dir once first (the one without) stopped.
func (w *gwWorld) poolRun(c config, res *gwResult, first *modeProc, dir string, start func(dir string, args ...string) (*modeProc, error), scaleLast int) error {
	first.stop()
	pm, err := start(dir, "--mode=gateway", "--backend-pool="+strconv.Itoa(poolSpares))
	if err != nil {
		return err
	}
	defer pm.stop()
	if _, err := untilServedAny(w.gwPort, 2*time.Minute); err != nil {
		return fmt.Errorf("the pool's controller: %w", err)
	}
	if scaleLast > 0 {
		if _, err := untilServedAny(scaleLast, 5*time.Minute); err != nil {
			return fmt.Errorf("the pool's controller, scale: %w", err)
		}
	}
	return w.newBackendPhaseNamed(res, pm, max(4, c.changes/5), fmt.Sprintf("same, with --backend-pool=%d", poolSpares))
}

// untilServedAny polls 127.0.0.1:port until any backend answers.
func untilServedAny(port int, deadline time.Duration) (time.Duration, error) {
	start := time.Now()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for time.Since(start) < deadline {
		if _, err := lab.Probe(addr, 500*time.Millisecond); err == nil {
			return time.Since(start), nil
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	return 0, fmt.Errorf("%s not served within %s", addr, deadline)
}
