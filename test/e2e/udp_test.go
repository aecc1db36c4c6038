package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/nft"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// udpEnv is the kernel's UDP path against the real kube-apiserver: the
// controller's nftables driver works in the load-balancer namespace of a
// netlab (client, load balancer, three nodes with UDP echo servers on the
// nodePort and kube-proxy-like health endpoints); the Nodes in the API
// carry the node namespaces' addresses.
type udpEnv struct {
	*env
	net *netlab.Lab
}

const (
	udpPort     = 51820
	udpNodePort = 31820
	healthPort  = 10256
)

func newUDPEnv(t *testing.T) *udpEnv {
	t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("no nft command (make deps)")
	}
	u := &udpEnv{net: netlab.New(t, 3)}
	u.net.Echo(udpNodePort)
	u.net.Health(healthPort)
	u.env = newEnv(t)
	for _, n := range u.net.Nodes {
		if err := lab.CreateNode(bg, u.client, n.Name, n.Addr.String(), true); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// start runs the controller with the test flags but for --bind-address
// (the UDP port listens on every address of the load balancer, the TCP
// frontends of other tests on loopback).
func (u *udpEnv) start() {
	u.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	u.ctlCancel, u.ctlDone, u.ctlLog = cancel, make(chan error, 1), &haproxytest.LockedBuffer{}
	var args []string
	all := u.controllerArgs("--udp=nftables", "--udp-netns", netlab.Path(u.net.LB), "--udp-ip-forward=enable",
		fmt.Sprintf("--udp-health=http:%d/healthz", healthPort), "--udp-health-interval=200ms")
	for i := 0; i < len(all); i++ {
		if all[i] == "--bind-address" {
			i++
			continue
		}
		args = append(args, all[i])
	}
	go func() { u.ctlDone <- cli.Run(ctx, args, func(string) string { return "" }, u.ctlLog) }()
	u.t.Cleanup(u.stopController)
}

func (u *udpEnv) table() string {
	u.t.Helper()
	out, err := u.net.ListTable(u.net.LB, nft.Table)
	if err != nil {
		u.t.Fatal(err)
	}
	return out
}

// flows opens n flows from the client's 192.0.2.2 and returns them with
// the node each reached.
func (u *udpEnv) flows(n int) ([]*netlab.Flow, []string) {
	u.t.Helper()
	src := netip.MustParseAddrPort("192.0.2.2:0")
	var fs []*netlab.Flow
	var nodes []string
	for i := range n {
		f := u.net.Dial(src, netip.AddrPortFrom(netlab.LBAddr, udpPort))
		node, err := f.Ask(2 * time.Second)
		if err != nil {
			u.t.Fatalf("flow %d: %v", i, err)
		}
		fs, nodes = append(fs, f), append(nodes, node)
	}
	return fs, nodes
}

// leaves waits until node is out of the table and its flows are gone
// from conntrack, then checks that every flow to another node kept its
// node and that the flows to it moved.
func (u *udpEnv) leaves(what, node string, fs []*netlab.Flow, nodes []string) {
	u.t.Helper()
	addr := u.nodeAddr(node)
	u.eventually(what, func() error {
		if strings.Contains(u.table(), addr.String()+" . ") {
			return fmt.Errorf("%s still in the table", node)
		}
		if n, err := netlab.UDPFlowsTo(u.net.LB, addr); err != nil || n != 0 {
			return fmt.Errorf("%d conntrack entries to %s (%v)", n, node, err)
		}
		return nil
	})
	for i, f := range fs {
		got, err := f.Ask(2 * time.Second)
		switch {
		case err != nil:
			u.t.Fatalf("%s: flow %d: %v", what, i, err)
		case nodes[i] != node && got != nodes[i]:
			u.t.Errorf("%s: flow %d moved from %s to %s though its node stayed", what, i, nodes[i], got)
		case got == node:
			u.t.Errorf("%s: flow %d still reaches %s", what, i, node)
		}
	}
}

func (u *udpEnv) returns(what, node string) {
	u.t.Helper()
	u.eventually(what, func() error {
		if !strings.Contains(u.table(), u.nodeAddr(node).String()+" . ") {
			return fmt.Errorf("%s not in the table", node)
		}
		return nil
	})
}

func (u *udpEnv) nodeAddr(name string) netip.Addr {
	for _, n := range u.net.Nodes {
		if n.Name == name {
			return n.Addr
		}
	}
	u.t.Fatalf("no node %s", name)
	return netip.Addr{}
}

func count(nodes []string) map[string]int {
	out := map[string]int{}
	for _, n := range nodes {
		out[n]++
	}
	return out
}

// The seed's WireGuard Service (UDP 51820 -> nodePort 31820): spread over
// the nodes; a node NotReady, excluded or failing its health probe stops
// receiving flows while the flows to the others keep their node; a
// controller restart changes nothing; deleting the Service removes its
// rules; a balance the kernel does not have is an Event.
func TestUDPThroughTheKernel(t *testing.T) {
	u := newUDPEnv(t)
	u.createUDPService(lab.Service{Namespace: ns, Name: "wg", Port: udpPort, NodePort: udpNodePort})
	u.start()
	u.eventually("the UDP port is in the table", func() error {
		tb, err := u.net.ListTable(u.net.LB, nft.Table)
		if err != nil {
			return err
		}
		return contains(tb, "udp_default_wg_51820")
	})
	fs, nodes := u.flows(30)
	if c := count(nodes); c["n1"] != 10 || c["n2"] != 10 || c["n3"] != 10 {
		t.Fatalf("30 flows (roundrobin): %v, want 10 per node", c)
	}

	if err := lab.SetNodeReady(bg, u.client, "n2", false); err != nil {
		t.Fatal(err)
	}
	u.leaves("NotReady n2 leaves", "n2", fs, nodes)
	if err := lab.SetNodeReady(bg, u.client, "n2", true); err != nil {
		t.Fatal(err)
	}
	u.returns("Ready n2 returns", "n2")

	fs, nodes = u.flows(9)
	if err := lab.SetNodeExcluded(bg, u.client, "n3", true); err != nil {
		t.Fatal(err)
	}
	u.leaves("excluded n3 leaves", "n3", fs, nodes)
	if err := lab.SetNodeExcluded(bg, u.client, "n3", false); err != nil {
		t.Fatal(err)
	}
	u.returns("n3 included again", "n3")

	fs, nodes = u.flows(9)
	u.net.Nodes[0].SetHealthy(false)
	u.leaves("n1 failing its health probe leaves", "n1", fs, nodes)
	u.net.Nodes[0].SetHealthy(true)
	u.returns("n1 healthy again returns", "n1")

	// A restart: the table stays while the controller is gone, and the
	// new controller changes nothing in it; the flows keep their node.
	fs, nodes = u.flows(6)
	before := u.table()
	u.stopController()
	if got := u.table(); got != before {
		t.Errorf("stopping the controller changed the table:\n%s", got)
	}
	u.start()
	u.eventually("the restarted controller made its first pass", func() error {
		return contains(u.ctlLog.String(), "msg=update")
	})
	if got := u.table(); got != before {
		t.Errorf("the restarted controller changed the table:\n%s\nwas\n%s", got, before)
	}
	for i, f := range fs {
		if got, err := f.Ask(2 * time.Second); err != nil || got != nodes[i] {
			t.Errorf("after the restart, flow %d: %s, %v; was %s", i, got, err, nodes[i])
		}
	}

	// A balance the kernel path does not have: an Event, the port leaves.
	svc, err := u.client.CoreV1().Services(ns).Get(bg, "wg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Annotations = map[string]string{"haproxy-k8s-sync.io/balance": "leastconn"}
	if svc, err = u.client.CoreV1().Services(ns).Update(bg, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	u.eventually("UnsupportedBalance Event", u.event("wg", "UnsupportedBalance"))
	svc.Annotations = map[string]string{"haproxy-k8s-sync.io/balance": "source"}
	if _, err = u.client.CoreV1().Services(ns).Update(bg, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	u.eventually("balance source hashes the client address", func() error {
		return contains(u.table(), "jhash ip saddr mod 3")
	})

	// Deleted: the UDP rules go. (Switched to TCP is the same model
	// change, covered without a wildcard TCP listener on the host by
	// desired's and nft's tests.)
	if err := u.client.CoreV1().Services(ns).Delete(bg, "wg", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	u.eventually("the UDP rules are removed", func() error {
		if tb := u.table(); strings.Contains(tb, "udp_default_wg") || strings.Contains(tb, "51820") {
			return fmt.Errorf("still in the table:\n%s", tb)
		}
		return nil
	})
}
