package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// The Services world of BenchmarkServicesScaleRSS (hack/bench's): Service
// i listens on port svcScalePort+i with nodePort svcScaleNodePort+i,
// externalTrafficPolicy Local; its endpoint j runs on node (i+j) mod the
// nodes, at 127.77.0.<n+1>, so its backend has a server per endpoint (a
// Cluster Service would have one per node: 20 servers each).
const (
	svcScalePort     = 20000
	svcScaleNodePort = 30000
	svcScaleNodes    = 20
)

// BenchmarkServicesScaleRSS: the controller in the Services mode (its
// binary, a process of its own) at HKS_BENCH_SERVICES LoadBalancer
// Services (default 10,000) with HKS_BENCH_ENDPOINTS ready endpoints each
// (default 5, over 20 Nodes: 50,000 endpoints), from its start until
// every Service's backend has its servers in HAProxy: its peak RSS
// (VmHWM), the highest RssAnon sampled (its own memory) and RssFile at
// the end (the binary's pages), and when each rise of the peak happened
// (the log line then); and HAProxy's RSS (master and workers) then. Issue 29's goal: peak RSS <= 100 MiB.
//
// The listeners are run's default where it can set them up, tproxy with
// its pool of ready backends (HKS_BENCH_LISTENERS=ports: a frontend per
// Service port). The objects are created once; HKS_BENCH_CONTROLLERS,
// HKS_BENCH_RUNS, HKS_BENCH_CONTROLLER_ENV, HKS_BENCH_LOGDIR and
// HKS_BENCH_HEAPPROFILE (a heap profile once everything is served) are
// BenchmarkGatewayHTTPScaleRSS's.
//
//	HKS_TESTBIN_DIR=... go test -run '^$' -bench BenchmarkServicesScaleRSS -benchtime 1x -timeout 40m ./test/e2e/
func BenchmarkServicesScaleRSS(b *testing.B) {
	if !inNetns(b, tproxyVIP) {
		return
	}
	services, endpoints := benchEnvInt("HKS_BENCH_SERVICES", 10000), benchEnvInt("HKS_BENCH_ENDPOINTS", 5)
	ctls := scaleControllers(b)
	kube := svcScaleWorld(b, services, endpoints, 0)
	tproxy := os.Getenv("HKS_BENCH_LISTENERS") != "ports"
	runs := benchEnvInt("HKS_BENCH_RUNS", 1)
	for k := range runs {
		for _, c := range ctls {
			svcScaleRun(b, kube.KubeconfigPath, services, tproxy, c, k, len(ctls)*runs > 1)
		}
	}
}

// svcScaleWorld starts a kube-apiserver holding the world of
// BenchmarkServicesScaleRSS, its node-port range with room for spare
// more Services (two node ports each, above the world's).
func svcScaleWorld(b *testing.B, services, endpoints, spare int) *kubeapi.Server {
	args := []string{fmt.Sprintf("--service-node-port-range=%d-%d", svcScaleNodePort, svcScaleNodePort+2*services+200+2*spare),
		"--service-cluster-ip-range=172.20.0.0/16"}
	if os.Getenv("HKS_BENCH_APISERVER_PROFILE") != "" {
		args = append(args, "--profiling=true", "--contention-profiling=true") // burstLoad's profiles
	}
	kube := kubeapi.StartWithOptions(b, kubeapi.Options{APIServerArgs: args})
	client := kube.Client(b)
	ctx := context.Background()
	t0 := time.Now()
	parallel(b, svcScaleNodes, func(n int) error {
		return lab.CreateNode(ctx, client, fmt.Sprintf("node-%02d", n), fmt.Sprintf("127.77.0.%d", n+1), true)
	})
	class := desired.DefaultClass
	parallel(b, services, func(i int) error {
		name := fmt.Sprintf("svc-%05d", i)
		if _, err := client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class, Selector: map[string]string{"app": name},
				// Its healthCheckNodePort set too: allocated, it could take
				// the nodePort of a Service created later.
				ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal, HealthCheckNodePort: int32(svcScaleNodePort + services + 100 + i),
				Ports: []corev1.ServicePort{{Name: "tcp", Port: int32(svcScalePort + i), NodePort: int32(svcScaleNodePort + i), Protocol: corev1.ProtocolTCP}}},
		}, metav1.CreateOptions{}); err != nil {
			return err
		}
		eps := make([]lab.Endpoint, endpoints)
		for j := range eps {
			k := i*16 + j + 1
			eps[j] = lab.Endpoint{IP: fmt.Sprintf("10.%d.%d.%d", (k>>16)&255, (k>>8)&255, k&255), Node: fmt.Sprintf("node-%02d", (i+j)%svcScaleNodes), Ready: true}
		}
		_, err := client.DiscoveryV1().EndpointSlices(ns).Create(ctx, lab.SliceFor(ns, name, 8080, eps), metav1.CreateOptions{})
		return err
	})
	b.Logf("%d Services, %d endpoints, %d Nodes created in %s", services, services*endpoints, svcScaleNodes, time.Since(t0).Round(time.Second))
	return kube
}

// svcScaleRun starts controller c (run k) with a fresh HAProxy, waits
// until every Service's backend has servers in service, and reports the
// controller's memory; it stops the controller and HAProxy.
func svcScaleRun(b *testing.B, kubeconfig string, services int, tproxy bool, c scaleController, k int, several bool) {
	dir := b.TempDir()
	l := listening{tproxy: tproxy}
	cfg := initHAProxyFor(b, dir, l)
	hap := c.startHAProxy(b, dir, cfg)
	defer hap.Kill(b)
	pprofAddr := fmt.Sprintf("127.0.0.1:%d", haproxytest.FreePort(b))
	ctl, logPath, name, t0 := startScaleController(b, c, k, dir, svcScaleArgs(kubeconfig, cfg, dir, hap, tproxy, pprofAddr))
	defer ctl.stop()
	rises, anonPeak, stop := watchPeak(ctl.Process.Pid, t0, logPath)
	defer stop()
	served, err := untilServicesServed(hap.StatsSocket, services, 15*time.Minute)
	if err != nil {
		b.Fatalf("%s: %v; controller log: %s", name, err, fileTail(logPath))
	}
	servedAfter := served.Sub(t0)
	// A few seconds more: the passes after the first (status writes,
	// the pool's growth) count towards the peak too.
	settle := time.Now().Add(5 * time.Second)
	for time.Now().Before(settle) {
		time.Sleep(100 * time.Millisecond) // watchPeak samples meanwhile; not a synchronisation
	}
	mem := procMem(ctl.Process.Pid)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	masterRSS, workerRSS, err := haproxyRSS(ctx, hap)
	cancel()
	if err != nil {
		b.Fatalf("%s: HAProxy's RSS: %v", name, err)
	}
	saveHeapProfile(b, pprofAddr, name, several)
	suffix := logRises(b, name, several, rises)
	b.ReportMetric(mib(mem["VmHWM"]), "ctl-peak-MiB"+suffix)
	b.ReportMetric(mib(anonPeak()), "ctl-anon-peak-MiB"+suffix)
	b.ReportMetric(mib(mem["RssFile"]), "ctl-file-MiB"+suffix)
	b.ReportMetric(mib(masterRSS+workerRSS), "haproxy-rss-MiB"+suffix)
	b.Logf("%s (%s): %d Services served %s after the controller started: peak %.1f MiB (RssAnon at most %.1f MiB; RssFile %.1f MiB at the end), RSS %.1f MiB 5 s later; HAProxy master %.1f + worker %.1f MiB; load %s",
		name, strings.Join(append([]string{c.bin}, c.env...), " "), services, servedAfter.Round(100*time.Millisecond), mib(mem["VmHWM"]),
		mib(anonPeak()), mib(mem["RssFile"]), mib(mem["VmRSS"]), mib(masterRSS), mib(workerRSS), loadAvg())
}

// svcScaleArgs are run's flags in the scale benchmarks' Services mode:
// HAProxy hap's files in dir, the listeners tproxy (run's default pool)
// or ports, no checks, pprof at pprofAddr.
func svcScaleArgs(kubeconfig, cfg, dir string, hap *haproxytest.Process, tproxy bool, pprofAddr string) []string {
	args := []string{"run", "--kubeconfig", kubeconfig, "--haproxy-config", cfg, "--haproxy-bin", hap.Bin,
		"--master-socket", hap.MasterSocket, "--stats-socket", hap.StatsSocket, "--state-file", filepath.Join(dir, "state"),
		"--metrics-address", "", "--udp=off", "--pprof-address", pprofAddr,
		// No checks: HAProxy's 50,000 checks would take the cores the
		// controller is measured on; its memory does not depend on them.
		"--default-check=false", "--node-check=none"}
	if tproxy { // run's default pool size
		args = append(args, "--bind-address", tproxyVIP, "--listeners=tproxy")
	} else {
		args = append(args, "--bind-address", "127.0.0.1", "--listeners=ports")
	}
	return args
}

// untilServicesServed polls HAProxy until n backends have a server in
// service on a Service's nodePort, and returns when it saw that.
func untilServicesServed(statsSocket string, n int, timeout time.Duration) (time.Time, error) {
	rt := haproxy.NewRuntime(statsSocket)
	defer rt.Close()
	deadline := time.Now().Add(timeout)
	got := 0
	for time.Now().Before(deadline) {
		rt.Reset() // the worker changes at each reload
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		states, err := rt.ShowServersState(ctx)
		cancel()
		if err == nil {
			seen := map[string]bool{}
			for _, s := range states {
				if !s.Maint() && s.Port >= svcScaleNodePort && int(s.Port) < svcScaleNodePort+n {
					seen[s.Backend] = true
				}
			}
			if got = len(seen); got >= n {
				return time.Now(), nil
			}
		}
		time.Sleep(200 * time.Millisecond) // poll interval
	}
	return time.Time{}, fmt.Errorf("%d of %d Services served after %s", got, n, timeout)
}

// logRises logs how the controller's peak RSS rose in run name (rises:
// watchPeak's) and returns the suffix of the run's metrics: "-name" when
// there are several runs, else none.
func logRises(b *testing.B, name string, several bool, rises func() string) string {
	b.Logf("%s: the controller's peak RSS as it rose (from its start; its log's last line then):\n%s", name, rises())
	if several {
		return "-" + name
	}
	return ""
}

// mib is kib KiB in MiB.
func mib(kib int64) float64 { return float64(kib) / 1024 }

// saveHeapProfile writes the heap profile of the controller serving
// pprof at addr to HKS_BENCH_HEAPPROFILE (.name when several runs).
func saveHeapProfile(b *testing.B, addr, name string, several bool) {
	path := os.Getenv("HKS_BENCH_HEAPPROFILE")
	if path == "" {
		return
	}
	if several {
		path += "." + name
	}
	if err := saveURL("http://"+addr+"/debug/pprof/heap?gc=1", path); err != nil {
		b.Errorf("heap profile: %v", err)
	}
}

// scaleProc is a controller process of the scale benchmarks.
type scaleProc struct {
	*exec.Cmd
	logf          *os.File
	logPath, name string
	stopped       bool
}

// startScaleController starts controller c (run k) with args, its log
// in dir, and returns it, its log's path, the run's name (label-k) and
// when it started.
func startScaleController(b *testing.B, c scaleController, k int, dir string, args []string) (*scaleProc, string, string, time.Time) {
	ctl := exec.Command(c.bin, args...)
	ctl.Env = append(append(os.Environ(), strings.Fields(os.Getenv("HKS_BENCH_CONTROLLER_ENV"))...), c.env...)
	logPath := filepath.Join(dir, "controller.log")
	logf, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	ctl.Stdout, ctl.Stderr = logf, logf
	name := fmt.Sprintf("%s-%d", c.label, k+1)
	t0 := time.Now()
	if err := ctl.Start(); err != nil {
		b.Fatal(err)
	}
	return &scaleProc{Cmd: ctl, logf: logf, logPath: logPath, name: name}, logPath, name, t0
}

// stop stops the controller (SIGINT, then a kill after 10 s) and keeps
// its log under HKS_BENCH_LOGDIR as name.log, once.
func (p *scaleProc) stop() {
	if p.stopped {
		return
	}
	p.stopped = true
	_ = p.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = p.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.Process.Kill()
		<-done
	}
	p.logf.Close()
	if d := os.Getenv("HKS_BENCH_LOGDIR"); d != "" {
		_ = os.WriteFile(filepath.Join(d, p.name+".log"), []byte(readFile(p.logPath)), 0o644)
	}
}
