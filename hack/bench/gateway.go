package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/gwcrd"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// The gateway benchmark (-gateway; make bench-gateway): change to served,
// the Gateway API mode against the Services mode, in one run on one
// apiserver, each mode with its own HAProxy and controller process
// (default settings). The servers are Pod IPs, which EndpointSlices may
// not hold on loopback: the benchmark re-runs itself in a network
// namespace it creates, whose stand-in Pods answer on 198.51.100.1-3
// (a documentation range) on an interface of its own.
//
//   - endpoint: Service web's one endpoint moves between pod-1 and pod-2:
//     one write, seen by both modes (web is a LoadBalancer Service and the
//     TCPRoute's backend);
//   - route: the TCPRoute's weights flip between web and other (both
//     backends of the route: a route map update, no reload), against the
//     same traffic move made to a LoadBalancer Service (lb, written at the
//     same moment: its endpoint between pod-1 and pod-3, the Service's way
//     to send to other Pods);
//   - new backend: the TCPRoute moved to a Service no route used (a new
//     backend: one reload).

const envBenchNetns = "HKS_BENCH_NETNS"

var gwPods = []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"}

// runGatewayBench runs the benchmark, in its network namespace.
func runGatewayBench(c config) error {
	if os.Getenv(envBenchNetns) == "" {
		pods := make([]string, len(gwPods))
		for i, a := range gwPods {
			pods[i] = a + "/24"
		}
		return reexecInNetns(c, pods)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	dir, err := os.MkdirTemp("", "hks-bench-gw-")
	if err != nil {
		return err
	}
	if !c.keep {
		defer os.RemoveAll(dir)
	}
	logf("gateway benchmark in network namespace %s, work directory %s", os.Getenv(envBenchNetns), dir)
	kube, stopKube, err := kubeapi.StartProcessWithOptions(filepath.Join(dir, "kube"), kubeapi.Options{})
	if err != nil {
		return err
	}
	defer stopKube()
	if err := installGatewayCRDs(kube); err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(kube.Config)
	if err != nil {
		return err
	}
	gc, err := gwclient.NewForConfig(kube.Config)
	if err != nil {
		return err
	}
	for i, a := range gwPods {
		pod := lab.NewNodeServer(fmt.Sprintf("pod-%d", i+1), a)
		if err := pod.Listen(8080); err != nil {
			return err
		}
		defer pod.Close()
	}
	w := &gwWorld{ctx: ctx, client: client, gc: gc, svcPort: int32(c.feBase), lbPort: int32(c.feBase + 1), gwPort: c.feBase + 2}
	if err := w.create(); err != nil {
		return err
	}
	scaleLast := 0
	if c.gatewayScale > 0 {
		if scaleLast, err = w.createScale(c.gatewayScale, c.feBase+100); err != nil {
			return err
		}
		logf("%d more routed backends", c.gatewayScale)
	}
	gwDir, svcDir := filepath.Join(dir, "gateway"), filepath.Join(dir, "services")
	gwH, err := startMode(c.ctlBin, gwDir, kube, "--mode=gateway")
	if err != nil {
		return err
	}
	defer gwH.stop()
	svcH, err := startMode(c.ctlBin, svcDir, kube, "--targets=pods", "--default-check=false")
	if err != nil {
		return err
	}
	defer svcH.stop()
	for _, port := range []int{w.gwPort, int(w.svcPort), int(w.lbPort)} {
		if _, err := untilServed(port, "pod-1", time.Now(), 60*time.Second); err != nil {
			return err
		}
	}
	if scaleLast > 0 {
		if _, err := untilServedAny(scaleLast, 5*time.Minute); err != nil {
			return err
		}
	}
	logf("both modes serve pod-1; %d changes per phase", c.changes)
	res := &gwResult{Changes: c.changes}
	if err := w.endpointPhase(res, gwH, svcH, c.changes); err != nil {
		return err
	}
	if err := w.routePhase(res, gwH, svcH, c.changes); err != nil {
		return err
	}
	if err := w.newBackendPhase(res, gwH, max(4, c.changes/5)); err != nil {
		return err
	}
	startIn := func(dir string, args ...string) (*modeProc, error) { return startMode(c.ctlBin, dir, kube, args...) }
	if err := w.poolRun(c, res, gwH, filepath.Join(dir, "gateway-pool"), startIn, scaleLast); err != nil {
		return err
	}
	res.print(os.Stdout)
	js, _ := json.Marshal(res)
	fmt.Println(string(js))
	return nil
}

// reexecInNetns creates the network namespace, with addrs (CIDR) on a
// dummy interface of its own, runs this benchmark again inside it and
// removes it.
func reexecInNetns(c config, addrs []string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("-gateway and -listeners=tproxy need root (a network namespace of their own)")
	}
	ctlBin := c.ctlBin
	if ctlBin == "" {
		tmp, err := os.MkdirTemp("", "hks-bench-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if ctlBin, err = buildController(tmp); err != nil {
			return err
		}
	}
	name := fmt.Sprintf("hks-bench-%d", os.Getpid())
	ip := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := ip("netns", "add", name); err != nil {
		return err
	}
	defer func() { _ = ip("netns", "del", name) }()
	if err := ip("-n", name, "link", "set", "lo", "up"); err != nil {
		return err
	}
	if ip("-n", name, "link", "add", "hks0", "type", "dummy") != nil {
		if err := ip("-n", name, "link", "add", "hks0", "type", "veth", "peer", "name", "hks1"); err != nil {
			return err
		}
		_ = ip("-n", name, "link", "set", "hks1", "up")
	}
	if err := ip("-n", name, "link", "set", "hks0", "up"); err != nil {
		return err
	}
	for _, a := range addrs {
		if err := ip("-n", name, "addr", "add", a, "dev", "hks0"); err != nil {
			return err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := append([]string{"netns", "exec", name, self, "-controller-bin", ctlBin}, os.Args[1:]...)
	cmd := exec.Command("ip", args...)
	cmd.Env = append(os.Environ(), envBenchNetns+"="+name)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// benchTB lets gwcrd.Install (written for tests) report to the benchmark.
type benchTB struct{ testing.TB }

type tbFailure struct{ msg string }

func (benchTB) Helper()                           {}
func (benchTB) Fatal(args ...any)                 { panic(tbFailure{fmt.Sprint(args...)}) }
func (benchTB) Fatalf(format string, args ...any) { panic(tbFailure{fmt.Sprintf(format, args...)}) }

func installGatewayCRDs(kube *kubeapi.Server) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(tbFailure)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("gateway API CRDs: %s", f.msg)
		}
	}()
	gwcrd.Install(benchTB{}, kube.Config)
	return nil
}

// modeProc is one mode's HAProxy and controller.
type modeProc struct {
	h      *haproxyProc
	ctl    *proc
	master *haproxy.Master
}

func startMode(ctlBin, dir string, kube *kubeapi.Server, args ...string) (*modeProc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	h, err := startHAProxy(ctlBin, dir)
	if err != nil {
		return nil, err
	}
	all := append([]string{"run", "--kubeconfig", kube.KubeconfigPath, "--haproxy-config", h.cfg, "--haproxy-bin", haproxytest.Bin(),
		"--master-socket", h.master, "--stats-socket", h.stats, "--state-file", h.state, "--bind-address", "127.0.0.1",
		"--log-level", "info", "--metrics-address", "", "--udp=off", "--listeners=ports"}, args...)
	ctl, err := startController(filepath.Join(dir, "controller.log"), ctlBin, nil, all...)
	if err != nil {
		h.stop(syscall.SIGTERM, 10*time.Second)
		return nil, err
	}
	return &modeProc{h: h, ctl: ctl, master: haproxy.NewMaster(h.master)}, nil
}

func (m *modeProc) stop() {
	m.ctl.stop(syscall.SIGTERM, 10*time.Second)
	m.h.stop(syscall.SIGTERM, 10*time.Second)
}

func (m *modeProc) reloads() int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := m.master.ShowProc(ctx)
	if err != nil {
		return -1
	}
	return p.Reloads
}

// untilServed polls 127.0.0.1:port until the backend answering is want,
// and returns how long after start that was.
func untilServed(port int, want string, start time.Time, deadline time.Duration) (time.Duration, error) {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for time.Since(start) < deadline {
		if name, err := lab.Probe(addr, 500*time.Millisecond); err == nil && name == want {
			return time.Since(start), nil
		}
		time.Sleep(2 * time.Millisecond) // poll interval
	}
	return 0, fmt.Errorf("%s not served by %s within %s", addr, want, deadline)
}

// both times one change, from start, until each port is served by want.
func both(start time.Time, gwPort int, gwWant string, svcPort int, svcWant string) (gw, svc time.Duration, err error) {
	type r struct {
		d   time.Duration
		err error
	}
	gc, sc := make(chan r, 1), make(chan r, 1)
	go func() { d, err := untilServed(gwPort, gwWant, start, 30*time.Second); gc <- r{d, err} }()
	go func() { d, err := untilServed(svcPort, svcWant, start, 30*time.Second); sc <- r{d, err} }()
	g, s := <-gc, <-sc
	if g.err != nil || s.err != nil {
		return 0, 0, fmt.Errorf("gateway: %v; service: %v", g.err, s.err)
	}
	return g.d, s.d, nil
}

func pctl(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s))*p+0.5) - 1
	return float64(s[max(0, min(i, len(s)-1))].Microseconds()) / 1000
}

// gwPhase is one phase's numbers, in milliseconds.
type gwPhase struct {
	Name                   string
	GatewayP50, GatewayP99 float64
	ServiceP50, ServiceP99 float64 // 0: not measured
	GatewayReloads         int
	ServiceReloads         int
	N                      int
}

type gwResult struct {
	Changes int
	Phases  []gwPhase
}

func (r *gwResult) add(name string, gw, svc []time.Duration, gwReloads, svcReloads int) {
	p := gwPhase{Name: name, GatewayP50: pctl(gw, 0.5), GatewayP99: pctl(gw, 0.99), ServiceP50: pctl(svc, 0.5), ServiceP99: pctl(svc, 0.99),
		GatewayReloads: gwReloads, ServiceReloads: svcReloads, N: len(gw)}
	r.Phases = append(r.Phases, p)
	logf("%s: %d changes, Gateway API p50 %.1f p99 %.1f ms (%d reloads); LoadBalancer Service p50 %.1f p99 %.1f ms (%d reloads)",
		name, p.N, p.GatewayP50, p.GatewayP99, p.GatewayReloads, p.ServiceP50, p.ServiceP99, p.ServiceReloads)
}

func (r *gwResult) print(out io.Writer) {
	fmt.Fprintln(out, "| change | n | Gateway API p50 / p99 | reloads | LoadBalancer Service p50 / p99 | reloads |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|")
	for _, p := range r.Phases {
		svc := "-"
		if p.ServiceP50 > 0 {
			svc = fmt.Sprintf("%.1f / %.1f ms", p.ServiceP50, p.ServiceP99)
		}
		fmt.Fprintf(out, "| %s | %d | %.1f / %.1f ms | %d | %s | %d |\n", p.Name, p.N, p.GatewayP50, p.GatewayP99, p.GatewayReloads, svc, p.ServiceReloads)
	}
}
