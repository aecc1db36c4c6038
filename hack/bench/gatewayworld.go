package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

const gwNS = "default"

// gwWorld is the gateway benchmark's objects: Services web and lb
// (LoadBalancer, served by the Services mode, one endpoint each) and
// other and third (not LoadBalancer), a Gateway with one TCP listener and
// a TCPRoute r to web (weight 1) and other (weight 0).
type gwWorld struct {
	ctx     context.Context
	client  kubernetes.Interface
	gc      gwclient.Interface
	svcPort int32 // web's port: the Services mode's frontend
	lbPort  int32 // lb's
	gwPort  int   // the Gateway's listener
}

func (w *gwWorld) create() error {
	for n, port := range map[string]int32{"web": w.svcPort, "lb": w.lbPort} {
		if _, err := lab.CreateService(w.ctx, w.client, lab.Service{Namespace: gwNS, Name: n, Port: port}); err != nil {
			return err
		}
	}
	for _, n := range []string{"other", "third"} {
		if _, err := w.client.CoreV1().Services(gwNS).Create(w.ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "tcp", Port: w.svcPort, Protocol: corev1.ProtocolTCP}}}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for svc, pod := range map[string]int{"web": 0, "lb": 0, "other": 2, "third": 1} {
		if err := w.endpoint(svc, pod); err != nil {
			return err
		}
	}
	if _, err := w.gc.GatewayV1().GatewayClasses().Create(w.ctx, &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "hks"},
		Spec: gwv1.GatewayClassSpec{ControllerName: gateway.ControllerName}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := w.gc.GatewayV1().Gateways(gwNS).Create(w.ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "hks", Listeners: []gwv1.Listener{{Name: "tcp", Protocol: gwv1.TCPProtocolType, Port: gwv1.PortNumber(w.gwPort)}}}},
		metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := w.gc.GatewayV1().TCPRoutes(gwNS).Create(w.ctx, &gwv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: w.route("web", 1, "other", 0)},
		metav1.CreateOptions{})
	return err
}

// endpoint makes pod i (gwPods) Service svc's one endpoint.
func (w *gwWorld) endpoint(svc string, i int) error {
	return lab.ApplySlice(w.ctx, w.client, lab.SliceFor(gwNS, svc, 8080, []lab.Endpoint{{IP: gwPods[i], Node: "n1", Ready: true}}))
}

// route is a TCPRoute spec to two Services with these weights.
func (w *gwWorld) route(a string, wa int32, b string, wb int32) gwv1.TCPRouteSpec {
	p := gwv1.PortNumber(w.svcPort)
	ref := func(n string, weight int32) gwv1.BackendRef {
		return gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(n), Port: &p}, Weight: &weight}
	}
	return gwv1.TCPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}},
		Rules: []gwv1.TCPRouteRule{{BackendRefs: []gwv1.BackendRef{ref(a, wa), ref(b, wb)}}}}
}

// setRoute writes route r's spec (retried when the status writer wrote
// meanwhile) and returns when the write returned.
func (w *gwWorld) setRoute(spec gwv1.TCPRouteSpec) (time.Time, error) {
	var at time.Time
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := w.gc.GatewayV1().TCPRoutes(gwNS).Get(w.ctx, "r", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec = spec
		at = time.Now()
		_, err = w.gc.GatewayV1().TCPRoutes(gwNS).Update(w.ctx, cur, metav1.UpdateOptions{})
		return err
	})
	return at, err
}

// endpointPhase: web's endpoint between pod-1 and pod-2, one write that
// both modes serve.
func (w *gwWorld) endpointPhase(res *gwResult, gwm, svcm *modeProc, n int) error {
	g0, s0 := gwm.reloads(), svcm.reloads()
	var gw, svc []time.Duration
	for i := range n {
		to := (i + 1) % 2
		start := time.Now()
		if err := w.endpoint("web", to); err != nil {
			return err
		}
		want := fmt.Sprintf("pod-%d", to+1)
		g, s, err := both(start, w.gwPort, want, int(w.svcPort), want)
		if err != nil {
			return fmt.Errorf("endpoint change %d: %w", i, err)
		}
		gw, svc = append(gw, g), append(svc, s)
	}
	res.add("endpoint (one write, both modes)", gw, svc, gwm.reloads()-g0, svcm.reloads()-s0)
	return w.endpoint("web", 0)
}

// routePhase: the route's weights flip between web (pod-1) and other
// (pod-3); LoadBalancer Service lb's traffic makes the same move, by its
// endpoint, written at the same moment.
func (w *gwWorld) routePhase(res *gwResult, gwm, svcm *modeProc, n int) error {
	g0, s0 := gwm.reloads(), svcm.reloads()
	var gw, svc []time.Duration
	for i := range n {
		spec, want, pod := w.route("web", 0, "other", 1), "pod-3", 2
		if i%2 == 1 {
			spec, want, pod = w.route("web", 1, "other", 0), "pod-1", 0
		}
		start := time.Now()
		errc := make(chan error, 1)
		go func() { errc <- w.endpoint("lb", pod) }()
		if _, err := w.setRoute(spec); err != nil {
			return err
		}
		if err := <-errc; err != nil {
			return err
		}
		g, s, err := both(start, w.gwPort, want, int(w.lbPort), want)
		if err != nil {
			return fmt.Errorf("route change %d: %w", i, err)
		}
		gw, svc = append(gw, g), append(svc, s)
	}
	res.add("route moved by weights / a Service's endpoint moved", gw, svc, gwm.reloads()-g0, svcm.reloads()-s0)
	return nil
}

// newBackendPhase: the route moved to a Service no route used, and back
// (each a new backend in HAProxy: a reload).
func (w *gwWorld) newBackendPhase(res *gwResult, gwm *modeProc, n int) error {
	return w.newBackendPhaseNamed(res, gwm, n, "route to a Service no route used (new backend)")
}

// newBackendPhaseNamed is newBackendPhase reported under name.
func (w *gwWorld) newBackendPhaseNamed(res *gwResult, gwm *modeProc, n int, name string) error {
	g0 := gwm.reloads()
	var gw []time.Duration
	for i := range n {
		spec, want := w.route("third", 1, "other", 0), "pod-2"
		if i%2 == 1 {
			spec, want = w.route("web", 1, "other", 0), "pod-1"
		}
		start, err := w.setRoute(spec)
		if err != nil {
			return err
		}
		d, err := untilServed(w.gwPort, want, start, 2*time.Minute) // a reload at -gateway-scale
		if err != nil {
			return fmt.Errorf("new backend %d: %w", i, err)
		}
		gw = append(gw, d)
	}
	res.add(name, gw, nil, gwm.reloads()-g0, 0)
	return nil
}
