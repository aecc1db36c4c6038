package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/nft"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/nodes"
)

// udpDeployments are the UDP app's Deployments, one per node.
var udpDeployments = []string{"udp-n1", "udp-n2"}

// createUDPApp creates Deployments udp-n1 and udp-n2 of agnhost netexec
// (one Pod each) and a Local NodePort Service udp with UDP port 5300 to
// netexec's UDP server.
func (r *realNodeEnv) createUDPApp() {
	r.t.Helper()
	for i, d := range udpDeployments {
		r.createDeployment(webApp(d, "udp", r.tier.Nodes[i].Name, 1))
	}
	r.createService(&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "udp", Annotations: map[string]string{"haproxy-k8s-sync.io/enabled": "true"}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "udp"},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports:                 []corev1.ServicePort{{Name: "udp", Port: udpAppPort, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("udp")}},
		},
	})
}

const udpAppPort = 5300

// udpThroughKubeProxy sends UDP from a client namespace through the
// controller's nftables path in the load balancer's namespace, then real
// kube-proxy (nftables) on both real nodes, to agnhost netexec's UDP
// server in real Pods (createUDPApp): every flow is answered, by Pods on
// both nodes (Local policy: a node's flows stay on its own Pods); the
// default UDP probe is the real kube-proxy's /healthz, and a node whose
// kube-proxy stops leaves the table, its flows moving to the other node.
func (r *realNodeEnv) udpThroughKubeProxy(t *testing.T) {
	const port = udpAppPort
	deps := udpDeployments
	r.waitRolledOut(deps...)
	r.startUDPController()
	defer r.stopController()
	r.eventually("the UDP port is in the table", func() error {
		out, err := r.tier.ListTable(r.tier.LB, nft.Table)
		if err != nil {
			return err
		}
		return contains(out, "udp_default_udp_5300")
	})
	lb := fmt.Sprintf("%s:%d", nodes.LBAddr, port)
	r.eventually("flows reach Pods on both nodes", func() error {
		seen, err := r.udpFlows(lb, 12)
		if err != nil {
			return err
		}
		if seen["udp-n1"] == 0 || seen["udp-n2"] == 0 {
			return fmt.Errorf("flows answered by %v, want both nodes' Pods", seen)
		}
		return nil
	})

	r.tier.Node("n1").StopKubeProxy()
	r.eventually("n1 leaves: every new flow reaches n2", func() error {
		seen, err := r.udpFlows(lb, 8)
		if err != nil {
			return err
		}
		if seen["udp-n1"] != 0 {
			return fmt.Errorf("flows answered by %v, want only udp-n2", seen)
		}
		return nil
	})
	if err := r.tier.Node("n1").StartKubeProxy(); err != nil {
		t.Fatal(err)
	}
	r.eventually("n1 back", func() error {
		seen, err := r.udpFlows(lb, 12)
		if err != nil {
			return err
		}
		if seen["udp-n1"] == 0 {
			return fmt.Errorf("flows answered by %v, want n1's Pod too", seen)
		}
		return nil
	})
}

// startUDPController runs the controller with the kernel UDP path in the
// load balancer's namespace (probing the real kube-proxy's /healthz) and
// without --bind-address (the UDP port listens on every address there).
func (r *realNodeEnv) startUDPController() {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r.ctlCancel, r.ctlDone, r.ctlLog = cancel, make(chan error, 1), &haproxytest.LockedBuffer{}
	all := r.controllerArgs("--udp=nftables", "--udp-netns", nodes.NSPath(r.tier.LB), "--udp-ip-forward=enable",
		fmt.Sprintf("--udp-health=http:%d/healthz", nodes.KubeProxyHealthPort), "--udp-health-interval=200ms")
	var args []string
	for i := 0; i < len(all); i++ {
		if all[i] == "--bind-address" || all[i] == "--udp" {
			i++
			continue
		}
		if all[i] == "--udp=off" {
			continue
		}
		args = append(args, all[i])
	}
	go func() { r.ctlDone <- cli.Run(ctx, args, func(string) string { return "" }, r.ctlLog) }()
	r.t.Cleanup(r.stopController)
}

// udpFlows opens n flows (each its own source port) from the client
// namespace to addr, asks netexec's UDP server for its hostname on each,
// and counts the answers per Deployment (the Pod name's prefix).
func (r *realNodeEnv) udpFlows(addr string, n int) (map[string]int, error) {
	seen := map[string]int{}
	err := nodes.InNS(r.tier.ClientNS, func() error {
		for range n {
			c, err := net.Dial("udp", addr)
			if err != nil {
				return err
			}
			name, err := askUDP(c)
			c.Close()
			if err != nil {
				return err
			}
			dep := name
			if i := strings.LastIndex(name, "-"); i > 0 {
				if j := strings.LastIndex(name[:i], "-"); j > 0 {
					dep = name[:j]
				}
			}
			seen[dep]++
		}
		return nil
	})
	return seen, err
}

// askUDP sends netexec's "hostname" command and reads the answer,
// retrying a lost datagram a few times.
func askUDP(c net.Conn) (string, error) {
	buf := make([]byte, 256)
	var err error
	for range 3 {
		if _, err = c.Write([]byte("hostname")); err != nil {
			return "", err
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		var k int
		if k, err = c.Read(buf); err == nil {
			return strings.TrimSpace(string(buf[:k])), nil
		}
	}
	return "", fmt.Errorf("no answer from %s: %w", c.RemoteAddr(), err)
}
