package e2e

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/tproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// TestTProxyListeners runs the controller with --listeners=tproxy against
// the real kube-apiserver: HAProxy (as `init --listeners=tproxy` wrote its
// config) and the TPROXY table in the load-balancer namespace of a netlab,
// two nodes serving the nodePort in theirs, every Service on
// --bind-address 203.0.113.10 (an address the load balancer does not
// hold). A Service is served through the one listener from the client
// namespace, with no frontend of its own in haproxy.cfg and its address
// and port in the kernel's set; a port not served is refused; a deleted
// Service leaves the set and is refused.
func TestTProxyListeners(t *testing.T) {
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("no nft command (make deps)")
	}
	nl := netlab.New(t, 2)
	const port, nodePort = 80, 30080
	vip := netip.MustParseAddr("203.0.113.10")
	for _, n := range nl.Nodes {
		var ln net.Listener
		if err := netlab.Do(n.NS, func() (err error) {
			ln, err = net.Listen("tcp", netip.AddrPortFrom(n.Addr, nodePort).String())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_, _ = c.Write([]byte(n.Name + "\n"))
				c.Close()
			}
		}()
	}
	kube := kubeapi.Start(t)
	client := kube.Client(t)
	for _, n := range nl.Nodes {
		if err := lab.CreateNode(bg, client, n.Name, n.Addr.String(), true); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "haproxy.cfg")
	state := filepath.Join(dir, "state")
	if code := cli.Main([]string{"haproxy-k8s-sync", "init", "--haproxy-config", cfg, "--stats-socket", haproxytest.StatsSocketPath(dir),
		"--state-file", state, "--listeners", "tproxy"}, nil, os.Stdout, os.Stderr); code != 0 {
		t.Fatalf("init exited %d", code)
	}
	hap := haproxytest.StartInNetNS(t, dir, cfg, netlab.Path(nl.LB))

	ctx, cancel := context.WithCancel(context.Background())
	done, log := make(chan error, 1), &haproxytest.LockedBuffer{}
	args := []string{"--kubeconfig", kube.KubeconfigPath, "--haproxy-config", cfg, "--haproxy-bin", haproxytest.Bin(),
		"--master-socket", hap.MasterSocket, "--stats-socket", hap.StatsSocket, "--state-file", state,
		"--bind-address", vip.String(), "--listeners", "tproxy", "--listener-netns", netlab.Path(nl.LB),
		"--node-check", "none", "--udp=off", "--metrics-address", "", "--resync-period", "3s",
		"--min-reload-interval", "100ms", "--persist-interval", "50ms", "--log-level", "debug"}
	go func() { done <- cli.Run(ctx, args, func(string) string { return "" }, log) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("controller did not stop")
		}
		if t.Failed() {
			t.Logf("controller log:\n%s", log.String())
		}
	})

	ask := func(dst netip.AddrPort) (string, error) { return netlab.AskTCP(nl.Client, netip.Addr{}, dst) }
	poll := func(what string, cond func() error) {
		t.Helper()
		if err := netlab.Eventually(bg, converge, cond); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	table := func() string {
		out, err := nl.ListTable(nl.LB, tproxy.Table)
		if err != nil {
			return err.Error()
		}
		return out
	}

	if _, err := lab.CreateService(bg, client, lab.Service{Namespace: "default", Name: "web", Port: port, NodePort: nodePort}); err != nil {
		t.Fatal(err)
	}
	var eps []lab.Endpoint
	for i, n := range nl.Nodes {
		eps = append(eps, lab.Endpoint{IP: fmt.Sprintf("10.244.%d.5", i), Node: n.Name, Ready: true})
	}
	if err := lab.ApplySlice(bg, client, lab.SliceFor("default", "web", 8080, eps)); err != nil {
		t.Fatal(err)
	}
	served := netip.AddrPortFrom(vip, port)
	poll("the Service served through the listener", func() error {
		got, err := ask(served)
		if got != "n1" && got != "n2" {
			return fmt.Errorf("%s: %q %v", served, got, err)
		}
		return nil
	})
	if !strings.Contains(table(), vip.String()+" . "+fmt.Sprint(port)) {
		t.Errorf("the set lacks %s:\n%s", served, table())
	}
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "frontend _listeners") || strings.Contains(string(b), "frontend fe_default_web") {
		t.Errorf("haproxy.cfg is not the tproxy rendering:\n%s", b)
	}
	if got, err := ask(netip.AddrPortFrom(vip, 81)); err == nil && got != "" {
		t.Errorf("a port not served answered %q", got)
	}
	if !strings.Contains(log.String(), "TCP listeners: one fixed listener through TPROXY") {
		t.Errorf("the start log does not say the listener mode")
	}

	if err := client.CoreV1().Services("default").Delete(bg, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("a deleted Service leaves the set and is refused", func() error {
		if strings.Contains(table(), vip.String()+" . ") {
			return fmt.Errorf("still in the set:\n%s", table())
		}
		if got, err := ask(served); err == nil && got != "" {
			return fmt.Errorf("still answers %q", got)
		}
		return nil
	})
}
