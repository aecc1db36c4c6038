package e2e

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// Dual-stack, in a network namespace with both families of the pool
// routed to the host (AnyIP) and a dual-stack apiserver: a RequireDualStack
// Service gets an address of each family and answers on both, with a
// frontend per family whose servers are the nodes' InternalIPs of that
// family; an IPv6 Service's servers are the nodes' IPv6 InternalIPs.
func TestDualStack(t *testing.T) {
	if !inNetns(t) {
		return
	}
	ipCommands(t, [][]string{
		{"route", "add", "local", "198.18.0.0/24", "dev", "lo"},
		{"-6", "route", "add", "local", "2001:db8:18::/120", "dev", "lo"},
		{"-6", "addr", "add", "2001:db8:99::1/128", "dev", "lo"}, // node n1's IPv6 InternalIP
		{"-6", "addr", "add", "2001:db8:99::2/128", "dev", "lo"}, // node n2's
	})
	e := newEnvOn(t, kubeapi.StartWithOptions(t, kubeapi.Options{
		APIServerArgs: []string{"--service-cluster-ip-range=10.0.0.0/16,fd00:10::/108"}}))
	e.addressPools(addressPool{"ds", map[string]any{"addresses": []any{"198.18.0.20/31", "2001:db8:18::20/127"}}})
	np := nodePort()
	for i, n := range []string{"n1", "n2"} {
		v4, v6 := fmt.Sprintf("127.%d.0.%d", e.subnet, i+1), fmt.Sprintf("2001:db8:99::%d", i+1)
		// dual's nodePort on both families, each answering with its
		// family; six's on IPv6 only: an answer through six proves its
		// servers are the IPv6 addresses.
		for _, l := range []struct {
			ip, name string
			ports    []int32
		}{{v4, n, []int32{np}}, {v6, n + "-v6", []int32{np, np + 1}}} {
			ns := lab.NewNodeServer(l.name, l.ip)
			for _, p := range l.ports {
				if err := ns.Listen(int(p)); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(ns.Close)
		}
		e.readyNode(n, v4, v6)
	}
	port := int32(haproxytest.FreePort(t))
	class := "haproxy-k8s-sync.io/lb"
	require, single := corev1.IPFamilyPolicyRequireDualStack, corev1.IPFamilyPolicySingleStack
	for _, s := range []struct {
		name   string
		policy *corev1.IPFamilyPolicy
		fams   []corev1.IPFamily
		np     int32
	}{
		{"dual", &require, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}, np},
		{"six", &single, []corev1.IPFamily{corev1.IPv6Protocol}, np + 1},
	} {
		_, err := e.client.CoreV1().Services(ns).Create(bg, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: s.name},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class,
				IPFamilyPolicy: s.policy, IPFamilies: s.fams,
				Ports: []corev1.ServicePort{{Port: port, NodePort: s.np, Protocol: corev1.ProtocolTCP}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The servers follow their node's check (readyNode answers it).
	e.startController("--address-pools")
	e.eventually("dual has an address of each family", e.ingress("dual", "198.18.0.20", "2001:db8:18::20"))
	e.eventually("six has an IPv6 address", e.ingress("six", "2001:db8:18::21"))
	// A frontend per family, each with the servers of its family.
	e.eventually("dual has a frontend per family", func() error {
		if tproxyMode() { // a key per family in the fixed listener's map
			return errors.Join(e.listenerMapsTo("198.18.0.20", port, ""), e.listenerMapsTo("2001:db8:18::20", port, ""))
		}
		return contains(e.config(), fmt.Sprintf("frontend fe_%s_dual_%d_v6\n\tbind [2001:db8:18::20]:%d transparent", ns, port, port))
	})
	e.eventually("dual answers on IPv4 from the nodes' IPv4 addresses", answersFrom("198.18.0.20", port, false))
	e.eventually("dual answers on IPv6 from the nodes' IPv6 addresses", answersFrom("2001:db8:18::20", port, true))
	e.eventually("six's servers are the nodes' IPv6 addresses", func() error {
		return contains(e.config(), fmt.Sprintf("[2001:db8:99::1]:%d", np+1))
	})
	e.eventually("six answers", servesOn("2001:db8:18::21", port))
}

// answersFrom checks that ten connections to addr:port are all answered
// by node servers of one family (IPv6 ones answer "nX-v6").
func answersFrom(addr string, port int32, v6 bool) func() error {
	return func() error {
		for range 10 {
			name, err := lab.Probe(net.JoinHostPort(addr, fmt.Sprint(port)), time.Second)
			if err != nil {
				return err
			}
			if !strings.HasPrefix(name, "n") || strings.HasSuffix(name, "-v6") != v6 {
				return fmt.Errorf("answered by %q", name)
			}
		}
		return nil
	}
}

// ipCommands runs ip(8) with each of args (inside the test's network
// namespace: inNetns).
func ipCommands(t *testing.T, args [][]string) {
	t.Helper()
	for _, a := range args {
		if out, err := exec.Command("ip", a...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", a, err, out)
		}
	}
}

// readyNode creates a Ready node with these InternalIPs, each answering
// the default --node-check (kube-proxy's /healthz stand-in on
// kubeProxyHealthPort): without it the node's servers pass only until
// their first failed checks, 4-6 s after the first reload, and a loaded
// run (CI's TestDualStack) sees EOF from a frontend with no server up.
func (e *env) readyNode(name string, addrs ...string) {
	e.t.Helper()
	for _, a := range addrs {
		h, err := lab.NewHealthServer(net.JoinHostPort(a, fmt.Sprint(kubeProxyHealthPort)))
		if err != nil {
			e.t.Fatalf("node %s: kube-proxy /healthz stand-in on %s: %v", name, a, err)
		}
		e.t.Cleanup(h.Close)
	}
	node, err := e.client.CoreV1().Nodes().Create(bg, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, a := range addrs {
		node.Status.Addresses = append(node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a})
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if _, err := e.client.CoreV1().Nodes().UpdateStatus(bg, node, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}
