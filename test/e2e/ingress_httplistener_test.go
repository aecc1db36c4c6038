package e2e

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// With --listeners=tproxy --http-listener the class's plain HTTP frontend
// is behind the fixed HTTP listener (render.Options.HTTPListened: its
// binds name one address each, keyable), so an IngressClass getting an
// address of its pool (the address-pool annotation, after the controller
// serves its Ingress on --bind-address) is a set element and a listener
// map entry, not a bind: its Ingress served on that address with 0
// reloads counted from the master's `show proc`, no longer served on the
// one it had; then an IPv6 address beside it (the ip-families
// annotation), 0 reloads too, and no bind of the port in the config. Without
// --http-listener the class's frontend binds the address: 1 reload.
func TestIngressAddressPoolHTTPListener(t *testing.T) {
	t.Setenv(envListeners, render.ListenersTProxy) // this mode whatever the suite's
	const cidr, first, cidr6, first6 = "198.18.3.0/29", "198.18.3.0", "2001:db8:3::/125", "2001:db8:3::1"
	if !inPoolNetns(t, cidr, podAddrs...) {
		return
	}
	if out, err := exec.Command("ip", "route", "add", "local", cidr6, "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("AnyIP route: %v: %s", err, out)
	}
	gw := newGatewayEnv(t)
	g := &ingressEnv{gwEnv: gw, ing: gw.client.NetworkingV1(), httpPort: haproxytest.FreePort(t)}
	g.addressPools(addressPool{"ing", map[string]any{"addresses": []any{"198.18.3.0-198.18.3.1", "2001:db8:3::1-2001:db8:3::2"}, "autoAssign": false}})
	if _, err := g.ing.IngressClasses().Create(bg, &netv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "hks"},
		Spec: netv1.IngressClassSpec{Controller: ingress.ControllerName}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.web("web", 0)
	token := g.rbacTokenFileFrom("../../deploy/gateway/rbac.yaml", "../../deploy/gateway/ingress-rbac.yaml", "../../deploy/gateway/address-pools-rbac.yaml")
	g.startController(g.withRole(token, "--mode=gateway", "--address-pools", "--http-listener", "--backend-pool=4",
		"--ingress-class=hks", fmt.Sprintf("--ingress-http-port=%d", g.httpPort))...)

	// The class without a pool: its Ingress served on --bind-address.
	g.create(ingressOf("shop", "shop.example.com", nil, prefix("/", "web")))
	g.eventually("served on --bind-address", answersAt(tproxyVIP, g.httpPort, "shop.example.com", "/x", 200, "web "))
	g.eventually("its status lists --bind-address", ingressStatus(g, "shop", tproxyVIP))
	// The pool's growth for the first backend is a reload aside
	// (backend-pool.md "Growth"): counted apart.
	const grew = `msg="backend pool grew aside"`
	before, grown := g.reloads(), strings.Count(g.ctlLog.String(), grew)

	// The class gets its address: data only.
	setClassPool(g, "ing")
	g.eventually("the class's address claimed", claimOf(g, first, "hks"))
	g.eventually("served on the class's address", answersAt(first, g.httpPort, "shop.example.com", "/x", 200, "web "))
	g.eventually("its status lists the class's address", ingressStatus(g, "shop", first))
	g.eventually("no longer served on --bind-address", refused(tproxyVIP, g.httpPort))
	if n, grows := g.reloads()-before, strings.Count(g.ctlLog.String(), grew)-grown; n != grows {
		t.Errorf("the class getting its address behind the HTTP listener: %d reloads (%d of them the pool's growth), want 0", n-grows, grows)
	}

	// Both families (the ip-families annotation): the IPv6 address is
	// data too, an element of the listener's IPv6 set.
	before, grown = g.reloads(), strings.Count(g.ctlLog.String(), grew)
	setClassAnnotation(g, pools.IngressClassFamiliesAnnotation, "IPv4,IPv6")
	g.eventually("the class's IPv6 address claimed", claimOf(g, first6, "hks"))
	g.eventually("served on the class's IPv6 address", answersAt(first6, g.httpPort, "shop.example.com", "/x", 200, "web "))
	g.eventually("served on its IPv4 address still", answersAt(first, g.httpPort, "shop.example.com", "/x", 200, "web "))
	g.eventually("its status lists both", ingressStatus(g, "shop", first, first6))
	if n, grows := g.reloads()-before, strings.Count(g.ctlLog.String(), grew)-grown; n != grows {
		t.Errorf("the class's IPv6 address behind the HTTP listener: %d reloads, want 0", n-grows)
	}
	cfg := g.config()
	if !strings.Contains(cfg, "frontend "+render.HTTPListenerFrontend+"\n") {
		t.Errorf("no fixed HTTP listener in the config:\n%s", cfg)
	}
	if p := ":" + strconv.Itoa(g.httpPort); strings.Contains(cfg, p+"\n") || strings.Contains(cfg, p+" ") {
		t.Errorf("a bind on the class's port %d in the config:\n%s", g.httpPort, cfg)
	}
}
