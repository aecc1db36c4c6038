package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// udpBackend is a Service with a UDP port whose one endpoint is the UDP
// echo server of a netlab node (it answers with the node's name).
func (g *gwEnv) udpBackend(name string, node *netlab.Node) {
	g.t.Helper()
	ctx := context.Background()
	_, err := g.client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "udp", Port: 53, Protocol: corev1.ProtocolUDP}}}}, metav1.CreateOptions{})
	if err != nil {
		g.t.Fatal(err)
	}
	pn, proto, port, ready := "udp", corev1.ProtocolUDP, int32(udpNodePort), true
	sl := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name + "-lab", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: &pn, Protocol: &proto, Port: &port}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{node.Addr.String()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}}}
	if _, err := g.client.DiscoveryV1().EndpointSlices(ns).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
		g.t.Fatal(err)
	}
}

// A UDPRoute with two backends weighted 3:1, through the nftables table
// in the load balancer's namespace of a netlab: new flows from the client
// namespace reach the backends' endpoints 3:1 (round robin over the
// map's entries, so exactly), and the route's status says Accepted.
func TestGatewayUDPRoute(t *testing.T) {
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("no nft command (make deps)")
	}
	lab := netlab.New(t, 2)
	lab.Echo(udpNodePort)
	g := newGatewayEnvOn(t, newEnv(t))
	ctx := context.Background()
	g.udpBackend("dns-a", lab.Nodes[0])
	g.udpBackend("dns-b", lab.Nodes[1])
	g.createGateway("gw", listener("dns", gwv1.UDPProtocolType, udpPort, ""))
	p := gwv1.PortNumber(53)
	ref := func(svc string, w int32) gwv1.BackendRef {
		return gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(svc), Port: &p}, Weight: &w}
	}
	_, err := g.gw.GatewayV1().UDPRoutes(ns).Create(ctx, &gwv1.UDPRoute{ObjectMeta: metav1.ObjectMeta{Name: "dns"},
		Spec: gwv1.UDPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parentRef("dns")},
			Rules: []gwv1.UDPRouteRule{{BackendRefs: []gwv1.BackendRef{ref("dns-a", 3), ref("dns-b", 1)}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The controller, its UDP path in the load balancer's namespace; the
	// listener binds every address there (no --bind-address).
	cctx, cancel := context.WithCancel(context.Background())
	g.ctlCancel, g.ctlDone, g.ctlLog = cancel, make(chan error, 1), &haproxytest.LockedBuffer{}
	var args []string
	all := g.controllerArgs("--mode=gateway", "--udp=nftables", "--udp-netns", netlab.Path(lab.LB), "--udp-ip-forward=enable", "--udp-health=none")
	for i := 0; i < len(all); i++ {
		if all[i] == "--bind-address" {
			i++
			continue
		}
		args = append(args, all[i])
	}
	go func() { g.ctlDone <- cli.Run(cctx, args, func(string) string { return "" }, g.ctlLog) }()
	t.Cleanup(g.stopController)

	g.eventually("UDPRoute accepted", g.routeAccepted(gateway.KindUDPRoute, "dns"))
	src := netip.MustParseAddrPort("192.0.2.2:0")
	dst := netip.AddrPortFrom(netlab.LBAddr, udpPort)
	g.eventually("served", func() error {
		_, err := lab.Dial(src, dst).Ask(time.Second)
		return err
	})
	counts := map[string]int{}
	const flows = 40
	for i := range flows {
		node, err := lab.Dial(src, dst).Ask(2 * time.Second)
		if err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
		counts[node]++
	}
	t.Logf("UDPRoute 3:1 over %d new flows: %v", flows, counts)
	a, b := counts[lab.Nodes[0].Name], counts[lab.Nodes[1].Name]
	if a+b != flows || a < 28 || a > 32 {
		t.Fatalf("flows %v, want 30 to %s and 10 to %s", counts, lab.Nodes[0].Name, lab.Nodes[1].Name)
	}
	if out, err := lab.ListTable(lab.LB, "haproxy_k8s_sync"); err == nil {
		t.Logf("table:\n%s", out)
	} else {
		t.Error(fmt.Errorf("list table: %w", err))
	}
}
