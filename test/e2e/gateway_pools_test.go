package e2e

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// gatewayOn creates Gateway name with one TCP listener on port (asking
// for addrs, if any) and a TCPRoute of the same name to Service svc.
func (g *gwEnv) gatewayOn(name string, port int, svc string, addrs ...string) {
	g.t.Helper()
	ip := gwv1.IPAddressType
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gwv1.GatewaySpec{GatewayClassName: "hks", Listeners: []gwv1.Listener{listener("tcp", gwv1.TCPProtocolType, port, "")}}}
	for _, a := range addrs {
		gw.Spec.Addresses = append(gw.Spec.Addresses, gwv1.GatewaySpecAddress{Type: &ip, Value: a})
	}
	if _, err := g.gw.GatewayV1().Gateways(ns).Create(bg, gw, metav1.CreateOptions{}); err != nil {
		g.t.Fatal(err)
	}
	_, err := g.gw.GatewayV1().TCPRoutes(ns).Create(bg, &gwv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gwv1.TCPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: gwv1.ObjectName(name)}}},
			Rules: []gwv1.TCPRouteRule{{BackendRefs: []gwv1.BackendRef{backendRef(svc, 1)}}}}}, metav1.CreateOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
}

// gatewayState is nil once Gateway name's status, for its generation,
// has exactly the addresses want and Programmed=True, or (want starting
// with "!") Programmed=False with that reason.
func (g *gwEnv) gatewayState(name string, want ...string) func() error {
	return func() error {
		gw, err := g.gw.GatewayV1().Gateways(ns).Get(bg, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(gw.Status.Conditions, "Programmed")
		if c == nil || c.ObservedGeneration != gw.Generation {
			return fmt.Errorf("Gateway %s: Programmed %+v", name, c)
		}
		if len(want) == 1 && strings.HasPrefix(want[0], "!") {
			if c.Status != metav1.ConditionFalse || c.Reason != want[0][1:] {
				return fmt.Errorf("Gateway %s: Programmed %s/%s (%s), want False/%s", name, c.Status, c.Reason, c.Message, want[0][1:])
			}
			if a := meta.FindStatusCondition(gw.Status.Conditions, "Accepted"); a == nil || a.Status != metav1.ConditionTrue {
				return fmt.Errorf("Gateway %s: Accepted %+v", name, a)
			}
			return nil
		}
		var got []string
		for _, a := range gw.Status.Addresses {
			got = append(got, a.Value)
		}
		if c.Status != metav1.ConditionTrue || !slices.Equal(got, want) {
			return fmt.Errorf("Gateway %s: Programmed %s/%s, addresses %v, want %v", name, c.Status, c.Reason, got, want)
		}
		return nil
	}
}

func servedAt(addr string, port int, want string) func() error {
	return func() error {
		got, err := lab.Probe(net.JoinHostPort(addr, fmt.Sprint(port)), time.Second)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%s:%d answered %q, want %q", addr, port, got, want)
		}
		return nil
	}
}

// Gateways get their addresses from an AddressPool, in a network
// namespace of the test's own where the pool is routed the AnyIP way:
// a LoadBalancer Service's address is never handed to a Gateway; two
// Gateways on one port get one address each and both serve there
// (transparent binds); a Gateway asking for the Service's address, or for
// one outside every pool, is Accepted but not Programmed
// (AddressNotUsable), and serves once it asks for a free one; a Gateway
// finding the pool exhausted is AddressNotAssigned; a restarted
// controller rebuilds every address from the statuses (the Service's
// address, freed meanwhile, goes to none of them). The controller runs
// with exactly the shipped role (deploy/gateway/rbac.yaml and
// address-pools-rbac.yaml).
func TestGatewayAddressPools(t *testing.T) {
	if !inPoolNetns(t, "198.18.1.0/28", podAddrs...) {
		return
	}
	g := newGatewayEnv(t)
	g.addressPools(addressPool{"gw", map[string]any{"addresses": []any{"198.18.1.0-198.18.1.3"}}})
	// A Service the Services mode gave 198.18.1.0.
	svc, err := g.client.CoreV1().Services(ns).Create(bg, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "tcp", Port: 443, Protocol: corev1.ProtocolTCP}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.18.1.0"}}
	if _, err := g.client.CoreV1().Services(ns).UpdateStatus(bg, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.backend("pod-a", 1, 8080)
	g.backend("pod-b", 2, 8080)
	const port = 9000
	g.gatewayOn("one", port, "pod-a")
	g.gatewayOn("two", port, "pod-b")
	g.gatewayOn("taken", port+1, "pod-a", "198.18.1.0")
	g.gatewayOn("outside", port+2, "pod-a", "203.0.113.9")
	token := g.rbacTokenFileFrom("../../deploy/gateway/rbac.yaml", "../../deploy/gateway/address-pools-rbac.yaml")
	args := g.withRole(token, "--mode=gateway", "--address-pools")
	g.startController(args...)
	g.eventually("one has 198.18.1.1", g.gatewayState("one", "198.18.1.1"))
	g.eventually("two has 198.18.1.2", g.gatewayState("two", "198.18.1.2"))
	g.eventually("one serves on its address", servedAt("198.18.1.1", port, "pod-a"))
	g.eventually("two serves on its address, same port", servedAt("198.18.1.2", port, "pod-b"))
	g.eventually("taken: AddressNotUsable", g.gatewayState("taken", "!AddressNotUsable"))
	g.eventually("outside: AddressNotUsable", g.gatewayState("outside", "!AddressNotUsable"))
	if err := servedAt("198.18.1.0", port+1, "pod-a")(); err == nil {
		t.Errorf("a Gateway serves on a Service's address")
	}
	if g.listen.tproxy { // a TCP listener behind the fixed listener: a key, no bind
		if err := g.listenerRoutesHave("198.18.1.1", port); err != nil {
			t.Errorf("one's address behind the listener: %v", err)
		}
	} else if !strings.Contains(g.config(), "198.18.1.1:9000 transparent") {
		t.Errorf("no transparent bind of one's address in:\n%s", g.config())
	}

	// Asking for a free address instead: served there.
	gw, err := g.gw.GatewayV1().Gateways(ns).Get(bg, "taken", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gw.Spec.Addresses[0].Value = "198.18.1.3"
	if _, err := g.gw.GatewayV1().Gateways(ns).Update(bg, gw, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.eventually("taken now has 198.18.1.3", g.gatewayState("taken", "198.18.1.3"))
	g.eventually("taken serves", servedAt("198.18.1.3", port+1, "pod-a"))
	// The pool is full.
	g.gatewayOn("late", port+3, "pod-a")
	g.eventually("late: AddressNotAssigned", g.gatewayState("late", "!AddressNotAssigned"))

	// Restart: the Service goes meanwhile, freeing the pool's first
	// address; every Gateway keeps its own (rebuilt from the statuses), and
	// only the one waiting gets the freed one.
	g.stopController()
	if err := g.client.CoreV1().Services(ns).Delete(bg, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	g.startController(args...)
	g.eventually("late gets the freed address", g.gatewayState("late", "198.18.1.0"))
	g.eventually("late serves", servedAt("198.18.1.0", port+3, "pod-a"))
	for name, want := range map[string]string{"one": "198.18.1.1", "two": "198.18.1.2", "taken": "198.18.1.3"} {
		if err := g.gatewayState(name, want)(); err != nil {
			t.Errorf("after the restart: %v", err)
		}
	}
	if err := servedAt("198.18.1.1", port, "pod-a")(); err != nil {
		t.Errorf("after the restart: %v", err)
	}
}

// The gateway mode and the Services mode share one AddressPool, each
// controller with its own HAProxy on one apiserver: the Services mode
// never gives a Service the address a Gateway holds (nor one a Service
// asks for: AddressTaken), the gateway mode finds the pool full of the
// Services' addresses (AddressNotAssigned), and a Gateway deleted frees
// its address for the Service that asked for it. The Services mode runs
// with exactly its shipped role (deploy/services/rbac.yaml: it reads
// Gateways).
func TestGatewaysAndServicesShareAPool(t *testing.T) {
	if !inPoolNetns(t, "198.18.2.0/29", podAddrs...) {
		return
	}
	g := newGatewayEnv(t)
	g.addressPools(addressPool{"shared", map[string]any{"addresses": []any{"198.18.2.0-198.18.2.2"}}})
	g.backend("pod-a", 1, 8080)
	g.gatewayOn("gw", 9000, "pod-a")
	g.startController("--mode=gateway", "--address-pools")
	g.eventually("gw has 198.18.2.0", g.gatewayState("gw", "198.18.2.0"))

	s := newEnvOn(t, g.kube)
	np := nodePort()
	s.addNode("n1", 1, true, np, np+1, np+2)
	s.createService(lab.Service{Namespace: ns, Name: "a", Port: 443, NodePort: np})
	s.startController(s.withRole(s.rbacTokenFile(), "--address-pools")...)
	s.eventually("a has 198.18.2.1, not the Gateway's", s.ingress("a", "198.18.2.1"))
	s.eventually("a serves", servesOn("198.18.2.1", 443))
	s.createService(lab.Service{Namespace: ns, Name: "b", Port: 8443, NodePort: np + 1,
		Annotations: map[string]string{settings.IPsAnnotation: "198.18.2.0"}})
	s.eventually("b: AddressTaken", s.event("b", pools.ReasonTaken))
	s.createService(lab.Service{Namespace: ns, Name: "c", Port: 443, NodePort: np + 2})
	s.eventually("c has 198.18.2.2", s.ingress("c", "198.18.2.2"))
	if err := s.ingress("b")(); err != nil {
		t.Errorf("b has an address: %v", err)
	}
	g.gatewayOn("gw2", 9001, "pod-a")
	g.eventually("gw2: the pool is full", g.gatewayState("gw2", "!AddressNotAssigned"))
	g.eventually("gw serves", servedAt("198.18.2.0", 9000, "pod-a"))

	if err := g.gw.GatewayV1().Gateways(ns).Delete(bg, "gw", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// b, older than gw2, asked for it first: the gateway mode keeps it
	// for b too.
	s.eventually("b gets the Gateway's address", s.ingress("b", "198.18.2.0"))
	s.eventually("b serves", servesOn("198.18.2.0", 8443))
	g.eventually("gw2 still waits", g.gatewayState("gw2", "!AddressNotAssigned"))
	if err := servedAt("198.18.2.0", 9001, "pod-a")(); err == nil {
		t.Errorf("gw2 serves on b's address")
	}
}
