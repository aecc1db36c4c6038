package e2e

import (
	"fmt"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// Source ranges apply per family, as the user means them and as
// kube-proxy applies them: a dual-stack Service with
// loadBalancerSourceRanges ["192.0.2.2/32", "::/0"] (IPv4 from one host,
// IPv6 from anywhere) serves the IPv4 client 192.0.2.2 and every IPv6
// client, and refuses the IPv4 client 192.0.2.3, which HAProxy alone
// would let in as ::ffff:192.0.2.3, inside ::/0. IPv4 ranges only then
// refuse the IPv6 client, without a reload. In a network namespace of its
// own: clients from documentation ranges, the Service's addresses from a
// pool routed to the host.
func TestSourceRangesPerFamily(t *testing.T) {
	if !inNetns(t) {
		return
	}
	const c4a, c4b, c6 = "192.0.2.2", "192.0.2.3", "2001:db8:c::2"
	ipCommands(t, [][]string{
		{"route", "add", "local", "198.18.0.0/24", "dev", "lo"},
		{"-6", "route", "add", "local", "2001:db8:18::/120", "dev", "lo"},
		{"addr", "add", c4a + "/32", "dev", "lo"},
		{"addr", "add", c4b + "/32", "dev", "lo"},
		{"-6", "addr", "add", c6 + "/128", "dev", "lo", "nodad"},
		{"-6", "addr", "add", "2001:db8:99::1/128", "dev", "lo"}, // node n1's IPv6 InternalIP
	})
	e := newEnvOn(t, kubeapi.StartWithOptions(t, kubeapi.Options{
		APIServerArgs: []string{"--service-cluster-ip-range=10.0.0.0/16,fd00:10::/108"}}))
	e.addressPools(addressPool{"ds", map[string]any{"addresses": []any{"198.18.0.30/32", "2001:db8:18::30/128"}}})
	np := nodePort()
	v4, v6 := fmt.Sprintf("127.%d.0.1", e.subnet), "2001:db8:99::1"
	for _, ip := range []string{v4, v6} {
		ns := lab.NewNodeServer("n1", ip)
		if err := ns.Listen(int(np)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ns.Close)
	}
	e.readyNode("n1", v4, v6)
	port := int32(haproxytest.FreePort(t))
	class := "haproxy-k8s-sync.io/lb"
	require := corev1.IPFamilyPolicyRequireDualStack
	if _, err := e.client.CoreV1().Services(ns).Create(bg, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dual"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class,
			IPFamilyPolicy: &require, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol},
			LoadBalancerSourceRanges: []string{"192.0.2.2/32", "::/0"},
			Ports:                    []corev1.ServicePort{{Port: port, NodePort: np, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No kube-proxy /healthz stand-in here: each server checked by itself.
	e.startController("--address-pools", "--node-check", "none", "--default-check-interval", "200ms")
	e.eventually("dual has an address of each family", e.ingress("dual", "198.18.0.30", "2001:db8:18::30"))
	at4, at6 := net.JoinHostPort("198.18.0.30", fmt.Sprint(port)), net.JoinHostPort("2001:db8:18::30", fmt.Sprint(port))
	e.eventually("IPv4 from 192.0.2.2 only, IPv6 from anywhere", servedFrom(map[string]bool{c4a: true, c4b: false}, at4, map[string]bool{c6: true}, at6))

	reloads := e.reloads()
	e.updateService("dual", func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"} })
	e.eventually("IPv4 ranges only: no IPv6 client", servedFrom(map[string]bool{c4a: true, c4b: true}, at4, map[string]bool{c6: false}, at6))
	if got := e.reloads(); got != reloads {
		t.Errorf("ranges moving between the families reloaded HAProxy (%d reloads, was %d)", got, reloads)
	}
}

// servedFrom reports nil once exactly the clients marked true, of each
// family, are served at their family's address.
func servedFrom(clients4 map[string]bool, at4 string, clients6 map[string]bool, at6 string) func() error {
	return func() error {
		for _, c := range []struct {
			clients map[string]bool
			at      string
		}{{clients4, at4}, {clients6, at6}} {
			for src, want := range c.clients {
				name, err := lab.ProbeFrom(src, c.at, time.Second)
				if got := err == nil && name != ""; got != want {
					return fmt.Errorf("client %s to %s served %v (%q, %v), want %v", src, c.at, got, name, err, want)
				}
			}
		}
		return nil
	}
}
