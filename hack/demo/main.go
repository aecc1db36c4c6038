// Command demo shows haproxy-k8s-sync working on one machine: a real
// kube-apiserver + etcd, a real HAProxy, three "nodes" on loopback
// addresses, two Services, traffic through HAProxy, and a node failing.
// Run it with `make demo`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

const (
	ns       = "default"
	nodePort = 30080
	webPort  = 18080
	shopPort = 18081
)

func main() {
	wait := flag.Bool("wait", false, "keep everything running after the demo until Ctrl-C")
	bin := flag.String("haproxy-bin", "haproxy", "haproxy binary")
	flag.Parse()
	if err := run(*wait, *bin); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("\n==> "+format+"\n", args...) }

func run(wait bool, bin string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "haproxy-k8s-sync-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir) // runs last, once everything started in it stopped
	step("starting a real kube-apiserver + etcd (files in %s)", dir)
	kube, stopKube, err := kubeapi.StartProcess(filepath.Join(dir, "kube"))
	if err != nil {
		return err
	}
	defer stopKube()
	client, err := kubeClient(kube)
	if err != nil {
		return err
	}

	step("writing an initial haproxy.cfg with `haproxy-k8s-sync init` and starting HAProxy in master-worker mode")
	cfg, stats, state := filepath.Join(dir, "haproxy.cfg"), filepath.Join(dir, "stats.sock"), filepath.Join(dir, "server-state")
	if code := cli.Main([]string{"haproxy-k8s-sync", "init", "--haproxy-config", cfg, "--stats-socket", stats, "--state-file", state}, nil, os.Stdout, os.Stderr); code != 0 {
		return fmt.Errorf("init failed")
	}
	hap, err := lab.StartHAProxy(bin, dir, cfg, stats)
	if err != nil {
		return err
	}
	defer hap.Stop()

	step("three nodes: n1..n3 with InternalIPs 127.77.0.1..3, each answering on nodePort %d with its name, and kube-proxy's /healthz on :10256", nodePort)
	nodes := map[string]*lab.NodeServer{}
	health := map[string]*lab.HealthServer{}
	for i, name := range []string{"n1", "n2", "n3"} {
		ip := fmt.Sprintf("127.77.0.%d", i+1)
		n := lab.NewNodeServer(name, ip)
		if err := n.Listen(nodePort); err != nil {
			return err
		}
		defer n.Close()
		nodes[name] = n
		h, err := lab.NewHealthServer(ip + ":10256") // the default --node-check
		if err != nil {
			return err
		}
		defer h.Close()
		health[name] = h
		if err := lab.CreateNode(ctx, client, name, ip, true); err != nil {
			return err
		}
	}

	step("Services: web (externalTrafficPolicy Cluster, port %d) and shop (Local, port %d, pods on n1 and n2; kube-proxy's stand-ins answer its healthCheckNodePort 200 there, 503 on n3)", webPort, shopPort)
	if _, err := lab.CreateService(ctx, client, lab.Service{Namespace: ns, Name: "web", Port: webPort, NodePort: nodePort}); err != nil {
		return err
	}
	shop, err := lab.CreateService(ctx, client, lab.Service{Namespace: ns, Name: "shop", Port: shopPort, NodePort: nodePort + 1, Local: true,
		Annotations: map[string]string{"haproxy-k8s-sync.io/balance": "leastconn"}})
	if err != nil {
		return err
	}
	// kube-proxy answers a Local Service's healthCheckNodePort on every
	// node: 200 where the node has a local endpoint, 503 elsewhere. The
	// controller checks shop's servers there (--local-check's default).
	shopHealth := map[string]*lab.HealthServer{}
	for i, name := range []string{"n1", "n2", "n3"} {
		h, err := lab.NewHealthServer(fmt.Sprintf("127.77.0.%d:%d", i+1, shop.Spec.HealthCheckNodePort))
		if err != nil {
			return err
		}
		defer h.Close()
		h.SetHealthy(name != "n3") // shop's pods are on n1 and n2
		shopHealth[name] = h
	}
	for _, n := range nodes {
		if err := n.Listen(nodePort + 1); err != nil {
			return err
		}
	}
	eps := []lab.Endpoint{{IP: "10.244.1.5", Node: "n1", Ready: true}, {IP: "10.244.2.7", Node: "n2", Ready: true}}
	if err := lab.ApplySlice(ctx, client, lab.SliceFor(ns, "shop", 8080, eps)); err != nil {
		return err
	}

	step("starting the controller: haproxy-k8s-sync run --kubeconfig %s ...", kube.KubeconfigPath)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	args := []string{"--kubeconfig", kube.KubeconfigPath, "--haproxy-config", cfg, "--haproxy-bin", bin,
		"--master-socket", hap.MasterSocket, "--stats-socket", stats, "--state-file", state,
		"--bind-address", "127.0.0.1", "--default-check-interval", "500ms", "--default-fall", "2", "--default-rise", "2",
		"--metrics-address", "127.0.0.1:0",
		"--listeners=ports", // per-port frontends: never the host's TPROXY (the default, auto, would set it up)
		"--udp=off"}         // never the host's nftables
	ctlDone := make(chan struct{})
	go func() {
		defer close(ctlDone)
		if err := cli.Run(cctx, args, func(string) string { return "" }, os.Stderr); err != nil && cctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "controller:", err)
		}
	}()
	// The controller stops before HAProxy (deferred earlier, so run
	// later): on its way out it writes HAProxy's server state through the
	// admin socket, which must still answer.
	defer func() {
		cancel()
		select {
		case <-ctlDone:
		case <-time.After(10 * time.Second):
			fmt.Fprintln(os.Stderr, "controller: not stopped after 10s")
		}
	}()

	if err := until(ctx, "web served by n1,n2,n3", webPort, "n1", "n2", "n3"); err != nil {
		return err
	}
	if err := until(ctx, "shop served by n1,n2 (Local policy)", shopPort, "n1", "n2"); err != nil {
		return err
	}
	reloads := reloadCount(ctx, hap.MasterSocket)

	step("node n2 fails: its NodePorts and /healthz stop answering and it turns NotReady")
	nodes["n2"].Close()
	health["n2"].Close()
	shopHealth["n2"].SetHealthy(false)
	if err := lab.SetNodeReady(ctx, client, "n2", false); err != nil {
		return err
	}
	if err := until(ctx, "web fails over to n1,n3", webPort, "n1", "n3"); err != nil {
		return err
	}
	step("the shop pod moves from n2 to n3 (EndpointSlice update)")
	eps[1] = lab.Endpoint{IP: "10.244.3.9", Node: "n3", Ready: true}
	shopHealth["n3"].SetHealthy(true) // kube-proxy on n3 has the local endpoint
	if err := lab.ApplySlice(ctx, client, lab.SliceFor(ns, "shop", 8080, eps)); err != nil {
		return err
	}
	if err := until(ctx, "shop served by n1,n3", shopPort, "n1", "n3"); err != nil {
		return err
	}
	fmt.Printf("\nreloads for all of that node and endpoint churn: %d (changes went through the Runtime API)\n", reloadCount(ctx, hap.MasterSocket)-reloads)
	if wait {
		fmt.Printf("the config HAProxy runs: %s\n", cfg)
		fmt.Printf("\nstill running: try  nc 127.0.0.1 %d  or  KUBECONFIG=%s kubectl ...  Ctrl-C to stop.\n", webPort, kube.KubeconfigPath)
		<-ctx.Done()
	} else {
		fmt.Println("the demo's files (the config HAProxy ran among them) go with it; make demo DEMOFLAGS=-wait keeps everything running until Ctrl-C")
	}
	fmt.Println("\ndemo finished: OK")
	return nil
}

// until probes port until exactly want answer, printing who answered.
func until(ctx context.Context, what string, port int, want ...string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		count := map[string]int{}
		for i := 0; i < 3*len(want); i++ {
			if name, err := lab.Probe(fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
				count[name]++
			}
		}
		names := make([]string, 0, len(count))
		for n := range count {
			names = append(names, n)
		}
		sort.Strings(names)
		if strings.Join(names, ",") == strings.Join(want, ",") {
			fmt.Printf("    OK  %-36s connections per node: %v\n", what, count)
			return nil
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
	return fmt.Errorf("%s: not reached in 30s", what)
}

func reloadCount(ctx context.Context, masterSocket string) int {
	p, err := haproxy.NewMaster(masterSocket).ShowProc(ctx)
	if err != nil {
		return -1
	}
	return p.Reloads
}
