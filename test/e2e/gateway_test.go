package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/gwcrd"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// gwEnv is an env with the Gateway API CRDs and a GatewayClass of ours.
type gwEnv struct {
	*env
	gw gwclient.Interface
}

func newGatewayEnv(t *testing.T) *gwEnv { return newGatewayEnvOn(t, newEnv(t)) }

// newGatewayEnvOn is newGatewayEnv on an env already made; the route
// CRDs named in alpha serve v1alpha2 only (gwcrd.InstallAlpha).
func newGatewayEnvOn(t *testing.T, e *env, alpha ...string) *gwEnv {
	gwcrd.InstallAlpha(t, e.kube.Config, alpha...)
	gc, err := gwclient.NewForConfig(e.kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	g := &gwEnv{env: e, gw: gc}
	_, err = gc.GatewayV1().GatewayClasses().Create(context.Background(), &gwv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: "hks"}, Spec: gwv1.GatewayClassSpec{ControllerName: gateway.ControllerName}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// backend is a Service (port 80, named tcp) whose one endpoint is a
// stand-in Pod at 198.51.100.i (an address of the test's own network
// namespace: EndpointSlices refuse loopback) answering its name on port.
func (g *gwEnv) backend(name string, i int, port int32) {
	g.t.Helper()
	pod := lab.NewNodeServer(name, fmt.Sprintf("198.51.100.%d", i))
	if err := pod.Listen(int(port)); err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(pod.Close)
	g.serviceOf(name, pod.IP, port)
}

// serviceOf is a Service name (port 80, named tcp) whose one endpoint is
// ip:port, a stand-in Pod of the test's.
func (g *gwEnv) serviceOf(name, ip string, port int32) {
	g.t.Helper()
	ctx := context.Background()
	_, err := g.client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "tcp", Port: 80, Protocol: corev1.ProtocolTCP}}}}, metav1.CreateOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	sl := lab.SliceFor(ns, name, port, []lab.Endpoint{{IP: ip, Node: "n1", Ready: true}})
	if err := lab.ApplySlice(ctx, g.client, sl); err != nil {
		g.t.Fatal(err)
	}
}

// createGateway creates Gateway name of the class hks with listeners ls.
func (g *gwEnv) createGateway(name string, ls ...gwv1.Listener) {
	g.t.Helper()
	_, err := g.gw.GatewayV1().Gateways(ns).Create(bg, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gwv1.GatewaySpec{GatewayClassName: "hks", Listeners: ls}}, metav1.CreateOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
}

func listener(name string, proto gwv1.ProtocolType, port int, host string) gwv1.Listener {
	l := gwv1.Listener{Name: gwv1.SectionName(name), Protocol: proto, Port: gwv1.PortNumber(port)}
	if host != "" {
		h := gwv1.Hostname(host)
		l.Hostname = &h
	}
	if proto == gwv1.TLSProtocolType {
		m := gwv1.TLSModePassthrough
		l.TLS = &gwv1.ListenerTLSConfig{Mode: &m}
	}
	return l
}

func backendRef(svc string, weight int32) gwv1.BackendRef {
	p := gwv1.PortNumber(80)
	return gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(svc), Port: &p}, Weight: &weight}
}

func parentRef(section string) []gwv1.ParentReference {
	s := gwv1.SectionName(section)
	return []gwv1.ParentReference{{Name: "gw", SectionName: &s}}
}

func (g *gwEnv) tcpRoute(name, section string, refs ...gwv1.BackendRef) {
	g.t.Helper()
	_, err := g.gw.GatewayV1().TCPRoutes(ns).Create(context.Background(), &gwv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gwv1.TCPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parentRef(section)}, Rules: []gwv1.TCPRouteRule{{BackendRefs: refs}}}},
		metav1.CreateOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
}

func (g *gwEnv) tlsRoute(name, section, host string, refs ...gwv1.BackendRef) {
	g.t.Helper()
	_, err := g.gw.GatewayV1().TLSRoutes(ns).Create(context.Background(), &gwv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gwv1.TLSRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parentRef(section)}, Hostnames: []gwv1.Hostname{gwv1.Hostname(host)},
			Rules: []gwv1.TLSRouteRule{{BackendRefs: refs}}}},
		metav1.CreateOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
}

// routeAccepted is nil once the route's parent status from us says
// Accepted and ResolvedRefs for its current generation.
func (g *gwEnv) routeAccepted(kind, name string) func() error {
	return func() error {
		var parents []gwv1.RouteParentStatus
		var gen int64
		switch kind {
		case gateway.KindTCPRoute:
			r, err := g.gw.GatewayV1().TCPRoutes(ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			parents, gen = r.Status.Parents, r.Generation
		case gateway.KindTLSRoute:
			r, err := g.gw.GatewayV1().TLSRoutes(ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			parents, gen = r.Status.Parents, r.Generation
		case gateway.KindHTTPRoute:
			r, err := g.gw.GatewayV1().HTTPRoutes(ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			parents, gen = r.Status.Parents, r.Generation
		case gateway.KindUDPRoute:
			r, err := g.gw.GatewayV1().UDPRoutes(ns).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			parents, gen = r.Status.Parents, r.Generation
		}
		for _, p := range parents {
			if p.ControllerName != gateway.ControllerName {
				continue
			}
			for _, typ := range []string{"Accepted", "ResolvedRefs"} {
				c := meta.FindStatusCondition(p.Conditions, typ)
				if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != gen {
					return fmt.Errorf("%s %s: %s is %+v", kind, name, typ, c)
				}
			}
			return nil
		}
		return fmt.Errorf("%s %s: no parent status of ours: %+v", kind, name, parents)
	}
}

// foreignStatus writes what another controller would: a parent of its
// own on TCPRoute split, a condition type of its own on Gateway gw.
func (g *gwEnv) foreignStatus() {
	g.t.Helper()
	ctx := context.Background()
	at := metav1.NewTime(time.Now().Truncate(time.Second))
	rt, err := g.gw.GatewayV1().TCPRoutes(ns).Get(ctx, "split", metav1.GetOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	rt.Status.Parents = []gwv1.RouteParentStatus{{ParentRef: gwv1.ParentReference{Name: "theirs"}, ControllerName: "example.com/other",
		Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", LastTransitionTime: at}}}}
	if _, err := g.gw.GatewayV1().TCPRoutes(ns).UpdateStatus(ctx, rt, metav1.UpdateOptions{}); err != nil {
		g.t.Fatal(err)
	}
	gws, err := g.gw.GatewayV1().Gateways(ns).Get(ctx, "gw", metav1.GetOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	gws.Status.Conditions = append(gws.Status.Conditions, metav1.Condition{Type: "example.com/Audited", Status: metav1.ConditionTrue, Reason: "Audited", LastTransitionTime: at})
	if _, err := g.gw.GatewayV1().Gateways(ns).UpdateStatus(ctx, gws, metav1.UpdateOptions{}); err != nil {
		g.t.Fatal(err)
	}
}

// clientHello is the first TLS record a client sends for server name sni.
func clientHello(t *testing.T, sni string) []byte {
	a, b := net.Pipe()
	go func() {
		_ = tls.Client(a, &tls.Config{ServerName: sni, InsecureSkipVerify: true}).Handshake() // ends when b closes
	}()
	defer a.Close()
	defer b.Close()
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(b, hdr); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	if _, err := io.ReadFull(b, body); err != nil {
		t.Fatal(err)
	}
	return append(hdr, body...)
}

// probeTLS sends a ClientHello for hello's server name and returns the
// name the backend behind it answered with (the stand-in answers on
// accept; what matters is which one HAProxy chose).
func probeTLS(port int, hello []byte) (string, error) { return probeTLSAt(serviceIP(), port, hello) }

// probeTLSAt is probeTLS to addr.
func probeTLSAt(addr string, port int, hello []byte) (string, error) {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(addr, strconv.Itoa(port)), time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write(hello); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	if s := strings.TrimSpace(string(b)); s != "" {
		return s, nil
	}
	return "", fmt.Errorf("no answer: %v", err)
}

// podAddrs are the stand-in Pods' addresses in the test's namespace.
var podAddrs = []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"}

// A TCPRoute splits connections 80/20 between two Services, measured over
// 1,000 connections; the controller runs with the shipped role only.
func TestGatewayTCPRouteWeights(t *testing.T) {
	if !inNetns(t, podAddrs...) {
		return
	}
	g := newGatewayEnv(t)
	tcpPort := haproxytest.FreePort(t)
	g.backend("pod-a", 1, 8080)
	g.backend("pod-b", 2, 8080)
	ctx := context.Background()
	g.createGateway("gw", listener("tcp", gwv1.TCPProtocolType, tcpPort, ""))
	g.tcpRoute("split", "tcp", backendRef("pod-a", 80), backendRef("pod-b", 20))
	// What other controllers wrote stays: a parent of theirs on the route,
	// a condition type of theirs on the Gateway.
	g.foreignStatus()
	// With exactly the shipped role (deploy/gateway/rbac.yaml), leader
	// election included: least privilege, proven.
	g.startController("--mode=gateway", "--kubeconfig", "", "--api-server", g.kube.URL, "--ca-file", g.kube.CAPath,
		"--token-file", g.rbacTokenFileFrom("../../deploy/gateway/rbac.yaml"),
		"--leader-elect", "--leader-election-namespace", "haproxy-k8s-sync", "--leader-election-name", "haproxy-k8s-sync-gateway")
	g.eventually("route accepted", g.routeAccepted(gateway.KindTCPRoute, "split"))
	g.eventually("served by both", serves(int32(tcpPort), "pod-a", "pod-b"))

	counts := map[string]int{}
	const n = 1000
	for range n {
		name, err := lab.Probe(fmt.Sprintf("%s:%d", serviceIP(), tcpPort), 2*time.Second)
		if err != nil {
			t.Fatalf("after %v: %v", counts, err)
		}
		counts[name]++
	}
	t.Logf("TCPRoute 80/20 over %d connections: pod-a %d, pod-b %d", n, counts["pod-a"], counts["pod-b"])
	// 80% of 1,000 has a standard deviation of ~12.6: 60 is ~4.7 of them.
	if a := counts["pod-a"]; a < 740 || a > 860 || counts["pod-a"]+counts["pod-b"] != n {
		t.Fatalf("split %v, want ~800/200", counts)
	}

	gws, err := g.gw.GatewayV1().Gateways(ns).Get(ctx, "gw", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(gws.Status.Conditions, "Programmed"); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != gws.Generation {
		t.Errorf("Gateway Programmed: %+v", c)
	}
	if len(gws.Status.Listeners) != 1 || gws.Status.Listeners[0].AttachedRoutes != 1 {
		t.Errorf("listeners: %+v", gws.Status.Listeners)
	}
	if len(gws.Status.Addresses) != 1 || gws.Status.Addresses[0].Value != serviceIP() {
		t.Errorf("addresses: %+v", gws.Status.Addresses)
	}
	cls, err := g.gw.GatewayV1().GatewayClasses().Get(ctx, "hks", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(cls.Status.Conditions, "Accepted"); c == nil || c.Status != metav1.ConditionTrue || len(cls.Status.SupportedFeatures) == 0 {
		t.Errorf("GatewayClass: %+v", cls.Status)
	}
	if c := meta.FindStatusCondition(gws.Status.Conditions, "example.com/Audited"); c == nil {
		t.Errorf("another controller's Gateway condition is gone: %+v", gws.Status.Conditions)
	}
	rt, err := g.gw.GatewayV1().TCPRoutes(ns).Get(ctx, "split", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rt.Status.Parents) != 2 || rt.Status.Parents[0].ControllerName != "example.com/other" {
		t.Errorf("route parents: %+v", rt.Status.Parents)
	}

	// An endpoint more for pod-b's Service: a server change, through the
	// Runtime API, no reload.
	before := g.reloads()
	pod := lab.NewNodeServer("pod-c", podAddrs[2])
	if err := pod.Listen(8080); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pod.Close)
	sl := lab.SliceFor(ns, "pod-b", 8080, []lab.Endpoint{{IP: "198.51.100.2", Node: "n1", Ready: true}, {IP: podAddrs[2], Node: "n1", Ready: true}})
	if err := lab.ApplySlice(ctx, g.client, sl); err != nil {
		t.Fatal(err)
	}
	g.eventually("the new endpoint serves", func() error {
		for range 200 {
			if name, _ := lab.Probe(fmt.Sprintf("%s:%d", serviceIP(), tcpPort), time.Second); name == "pod-c" {
				return nil
			}
		}
		return fmt.Errorf("pod-c not reached in 200 connections")
	})
	if r := g.reloads(); r != before {
		t.Errorf("an endpoint change reloaded HAProxy (%d -> %d)", before, r)
	}
}

func TestGatewayTLSRouteBySNI(t *testing.T) {
	if !inNetns(t, podAddrs...) {
		return
	}
	g := newGatewayEnv(t)
	tlsPort, tcpPort := haproxytest.FreePort(t), haproxytest.FreePort(t)
	g.backend("pod-a", 1, 8443)
	g.backend("pod-b", 2, 8443)
	ctx := context.Background()
	g.createGateway("gw",
		listener("tls", gwv1.TLSProtocolType, tlsPort, "*.example.com"),
		listener("tcp", gwv1.TCPProtocolType, tcpPort, ""))
	g.tlsRoute("a", "tls", "a.example.com", backendRef("pod-a", 1))
	g.tlsRoute("b", "tls", "b.example.com", backendRef("pod-b", 1))
	g.tcpRoute("plain", "tcp", backendRef("pod-a", 1))
	g.startController("--mode=gateway")
	g.eventually("routes accepted", func() error {
		for _, r := range []string{"a", "b"} {
			if err := g.routeAccepted(gateway.KindTLSRoute, r)(); err != nil {
				return err
			}
		}
		return g.routeAccepted(gateway.KindTCPRoute, "plain")()
	})
	ha, hb, hc := clientHello(t, "a.example.com"), clientHello(t, "b.example.com"), clientHello(t, "c.example.com")
	for i := range 10 {
		for hello, want := range map[*[]byte]string{&ha: "pod-a", &hb: "pod-b"} {
			got, err := probeTLS(tlsPort, *hello)
			if err != nil || got != want {
				t.Fatalf("probe %d: got %q (%v), want %s", i, got, err, want)
			}
		}
	}
	// A name no route takes is not served.
	if got, err := probeTLS(tlsPort, hc); err == nil {
		t.Fatalf("c.example.com was served by %q", got)
	}

	// A listener added and removed: the other listeners' connections
	// never fail meanwhile.
	stop := g.startLoad(int32(tcpPort))
	extra := haproxytest.FreePort(t)
	gws, err := g.gw.GatewayV1().Gateways(ns).Get(ctx, "gw", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gws.Spec.Listeners = append(gws.Spec.Listeners, listener("extra", gwv1.TCPProtocolType, extra, ""))
	if _, err := g.gw.GatewayV1().Gateways(ns).Update(ctx, gws, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.tcpRoute("extra", "extra", backendRef("pod-b", 1))
	g.eventually("the new listener serves", serves(int32(extra), "pod-b"))
	g.eventually("the new route is accepted", g.routeAccepted(gateway.KindTCPRoute, "extra"))
	for range 20 {
		for hello, want := range map[*[]byte]string{&ha: "pod-a", &hb: "pod-b"} {
			if got, err := probeTLS(tlsPort, *hello); err != nil || got != want {
				t.Fatalf("TLS during the change: got %q (%v), want %s", got, err, want)
			}
		}
	}
	gws, err = g.gw.GatewayV1().Gateways(ns).Get(ctx, "gw", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gws.Spec.Listeners = gws.Spec.Listeners[:2]
	if _, err := g.gw.GatewayV1().Gateways(ns).Update(ctx, gws, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.eventually("the removed listener is closed", func() error {
		if name, err := lab.Probe(fmt.Sprintf("%s:%d", serviceIP(), extra), 500*time.Millisecond); err == nil {
			return fmt.Errorf("still served by %s", name)
		}
		return nil
	})
	r := stop()
	t.Logf("listener added and removed: %d connections on the TCP listener, %d failed", r.total, r.failed)
	// The route of a removed listener is no longer accepted.
	g.eventually("the orphan route is not accepted", func() error {
		if g.routeAccepted(gateway.KindTCPRoute, "extra")() == nil {
			return fmt.Errorf("still accepted")
		}
		return nil
	})
}
