package e2e

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// An IngressClass naming an AddressPool (the address-pool annotation)
// gets one address of it, in a network namespace of the test's own where
// the pool is routed the AnyIP way: the class's HTTP frontend binds it
// (transparent) before any Ingress, so the first Ingress reloads
// nothing (its backend a spare of --backend-pool; the pool's own growth
// aside counted apart), nor does a first Ingress again on the frontend
// its last one left; every served Ingress's status lists it; its claim (an
// IPAddress whose parent is the IngressClass) is made, and released when
// the class names another pool and when it is deleted. A pool that does
// not exist or has no free address (a LoadBalancer Service holds it): a
// Warning Event on the IngressClass, and the class's Ingresses served
// nowhere: not on the address it had, not on the Service's, not on any
// other. The controller runs with exactly the shipped roles.
func TestIngressAddressPool(t *testing.T) {
	const cidr, first, taken = "198.18.3.0/29", "198.18.3.0", "198.18.3.4"
	if !inPoolNetns(t, cidr, podAddrs...) {
		return
	}
	gw := newGatewayEnv(t)
	g := &ingressEnv{gwEnv: gw, ing: gw.client.NetworkingV1(), httpPort: haproxytest.FreePort(t)}
	g.addressPools(addressPool{"ing", map[string]any{"addresses": []any{"198.18.3.0-198.18.3.1"}, "autoAssign": false}},
		addressPool{"full", map[string]any{"addresses": []any{taken + "/32"}, "autoAssign": false}})
	// A LoadBalancer Service holding the "full" pool's one address.
	svc, err := g.client.CoreV1().Services(ns).Create(bg, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "lb",
		Annotations: map[string]string{settings.PoolAnnotation: "full"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "http", Port: int32(g.httpPort), Protocol: corev1.ProtocolTCP}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: taken}}
	if _, err := g.client.CoreV1().Services(ns).UpdateStatus(bg, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	class, err := g.ing.IngressClasses().Create(bg, &netv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "hks",
		Annotations: map[string]string{settings.PoolAnnotation: "ing"}},
		Spec: netv1.IngressClassSpec{Controller: ingress.ControllerName}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g.web("web", 0)
	token := g.rbacTokenFileFrom("../../deploy/gateway/rbac.yaml", "../../deploy/gateway/ingress-rbac.yaml", "../../deploy/gateway/address-pools-rbac.yaml")
	g.startController(g.withRole(token, "--mode=gateway", "--address-pools", "--backend-pool=4", "--ingress-class=hks", fmt.Sprintf("--ingress-http-port=%d", g.httpPort))...)

	// Before any Ingress: the class's address is claimed and bound.
	g.eventually("the class's address claimed", claimOf(g, first, "hks"))
	g.eventually("the class's frontend answers on its address", answersAt(first, g.httpPort, "shop.example.com", "/", 404, ""))
	// Behind the fixed HTTP listener (--http-listener) the address is a
	// key of that listener, not a bind (TestIngressAddressPoolHTTPListener).
	if cfg, bind := g.config(), fmt.Sprintf("%s:%d transparent", first, g.httpPort); g.listen.http {
		if strings.Contains(cfg, bind) || !strings.Contains(cfg, "frontend "+render.HTTPListenerFrontend+"\n") {
			t.Errorf("with --http-listener, a bind of the class's address or no %s in:\n%s", render.HTTPListenerFrontend, cfg)
		}
	} else if !strings.Contains(cfg, bind) {
		t.Errorf("no transparent bind of the class's address in:\n%s", cfg)
	}
	// The first Ingress: no reload of its own (the HTTP class's first
	// backend then tops the backend pool up, one reload aside, counted
	// apart: backend-pool.md "Growth").
	const grew = `msg="backend pool grew aside"`
	before, grown := g.reloads(), strings.Count(g.ctlLog.String(), grew)
	g.create(ingressOf("shop", "shop.example.com", nil, prefix("/", "web")))
	g.eventually("the first Ingress serves on the class's address", answersAt(first, g.httpPort, "shop.example.com", "/x", 200, "web "))
	g.eventually("its status lists the class's address", ingressStatus(g, "shop", first))
	g.eventually("no reload but the pool's growth", func() error {
		if n, grows := g.reloads()-before, strings.Count(g.ctlLog.String(), grew)-grown; n != grows {
			return fmt.Errorf("the first Ingress on the class's address: %d reloads, %d of them the pool's growth", n, grows)
		}
		return nil
	})
	// The last Ingress gone, the frontend stays: the next first Ingress
	// is map data and a free spare, 0 reloads.
	if err := g.ing.Ingresses(ns).Delete(bg, "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	g.eventually("the frontend stays, empty", answersAt(first, g.httpPort, "shop.example.com", "/x", 404, ""))
	before = g.reloads()
	g.create(ingressOf("shop", "shop.example.com", nil, prefix("/", "web")))
	g.eventually("served again", answersAt(first, g.httpPort, "shop.example.com", "/x", 200, "web "))
	g.eventually("its status lists the class's address", ingressStatus(g, "shop", first))
	if n := g.reloads() - before; n != 0 {
		t.Errorf("a first Ingress on the class's empty frontend: %d reloads, want 0", n)
	}
	if code, _, err := get(g.httpPort, false, "shop.example.com", "/x"); err == nil {
		t.Errorf("served on the node's own address too (%d)", code)
	}

	// A pool that does not exist: an Event, nothing served, the claim
	// and the status released.
	setClassPool(g, "missing")
	g.eventually("an Event: no such pool", classEvent(g, "AddressNotAssigned", "missing"))
	g.eventually("not served on the address it had", refused(first, g.httpPort))
	g.eventually("the claim released", claimOf(g, first, ""))
	g.eventually("the status emptied", ingressStatus(g, "shop"))

	// Exhausted: the pool's one address is the Service's.
	setClassPool(g, "full")
	g.eventually("an Event: exhausted", classEvent(g, "AddressNotAssigned", "no free IPv4 address in AddressPool(s) full"))
	if err := refused(taken, g.httpPort)(); err != nil {
		t.Error(err)
	}
	if err := refused(first, g.httpPort)(); err != nil {
		t.Error(err)
	}

	// Back to a pool with room: served again; the class deleted: the
	// claim released.
	setClassPool(g, "ing")
	g.eventually("served again", answersAt(first, g.httpPort, "shop.example.com", "/x", 200, "web "))
	if err := g.ing.IngressClasses().Delete(bg, class.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	g.eventually("the claim released with the class", claimOf(g, first, ""))
}

// answersAt is answers to addr.
func answersAt(addr string, port int, host, path string, status int, want string) func() error {
	return func() error {
		code, body, err := getAt(addr, port, false, host, path)
		if err != nil {
			return err
		}
		if code != status || !strings.HasPrefix(body, want) {
			return fmt.Errorf("GET %s%s at %s: %d %q, want %d %q", host, path, addr, code, body, status, want)
		}
		return nil
	}
}

// refused is nil once nothing answers HTTP at addr:port.
func refused(addr string, port int) func() error {
	return func() error {
		if code, _, err := getAt(addr, port, false, "shop.example.com", "/x"); err == nil {
			return fmt.Errorf("%s:%d answered %d", addr, port, code)
		}
		return nil
	}
}

// claimOf is nil once IPAddress addr is our claim for IngressClass
// class ("": no such IPAddress).
func claimOf(g *ingressEnv, addr, class string) func() error {
	return func() error {
		ip, err := g.client.NetworkingV1().IPAddresses().Get(bg, addr, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && class == "":
			return nil
		case err != nil:
			return err
		case class == "":
			return fmt.Errorf("IPAddress %s still there: %+v", addr, ip.Spec.ParentRef)
		}
		if r := ip.Spec.ParentRef; r == nil || r.Resource != "ingressclasses" || r.Name != class {
			return fmt.Errorf("IPAddress %s: parent %+v", addr, r)
		}
		return nil
	}
}

// ingressStatus is nil once Ingress name's status lists exactly ips.
func ingressStatus(g *ingressEnv, name string, ips ...string) func() error {
	return func() error {
		o, err := g.ing.Ingresses(ns).Get(bg, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var got []string
		for _, l := range o.Status.LoadBalancer.Ingress {
			got = append(got, l.IP)
		}
		if strings.Join(got, ",") != strings.Join(ips, ",") {
			return fmt.Errorf("Ingress %s: status lists %v, want %v", name, got, ips)
		}
		return nil
	}
}

// setClassPool sets IngressClass hks's address-pool annotation.
func setClassPool(g *ingressEnv, pool string) {
	g.t.Helper()
	setClassAnnotation(g, settings.PoolAnnotation, pool)
}

// setClassAnnotation sets annotation key of IngressClass hks.
func setClassAnnotation(g *ingressEnv, key, value string) {
	g.t.Helper()
	c, err := g.ing.IngressClasses().Get(bg, "hks", metav1.GetOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[key] = value
	if _, err := g.ing.IngressClasses().Update(bg, c, metav1.UpdateOptions{}); err != nil {
		g.t.Fatal(err)
	}
}

// classEvent is nil once a Warning Event of reason on IngressClass hks
// has a message containing text.
func classEvent(g *ingressEnv, reason, text string) func() error {
	return func() error {
		evs, err := g.client.CoreV1().Events("").List(bg, metav1.ListOptions{FieldSelector: "involvedObject.kind=IngressClass,involvedObject.name=hks"})
		if err != nil {
			return err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == reason && strings.Contains(e.Message, text) {
				return nil
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return fmt.Errorf("no Warning %s with %q among %q", reason, text, seen)
	}
}
