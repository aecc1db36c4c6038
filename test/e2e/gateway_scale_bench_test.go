package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// rssKiB reads VmRSS and VmHWM (KiB) of pid from /proc.
func rssKiB(pid int) (rss, hwm int64) {
	m := procMem(pid)
	return m["VmRSS"], m["VmHWM"]
}

// haproxyRSS is the VmRSS (KiB) of hap's master and of its workers
// together.
func haproxyRSS(ctx context.Context, hap *haproxytest.Process) (master, workers int64, err error) {
	p, err := haproxy.NewMaster(hap.MasterSocket).ShowProc(ctx)
	if err != nil {
		return 0, 0, err
	}
	master, _ = rssKiB(hap.MasterPID())
	for _, w := range p.Workers {
		r, _ := rssKiB(w)
		workers += r
	}
	return master, workers, nil
}

// procMem reads the memory lines of pid's /proc status (KiB by name:
// VmRSS, VmHWM, RssAnon, RssFile, ...).
func procMem(pid int) map[string]int64 {
	out := map[string]int64{}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || !strings.HasSuffix(v, " kB") {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		out[k] = n
	}
	return out
}

// BenchmarkGatewayHTTPScaleRSS: the controller (its binary, a process of
// its own) and HAProxy at HKS_BENCH_ROUTES HTTPRoutes (default 10,000; on
// one HTTP listener, each its own host) to HKS_BENCH_SERVICES Services
// (default 5,000; one endpoint each) and HKS_BENCH_CERTS certificates
// (default 1,000; Secrets named by 16 HTTPS listeners on one port): once
// every route and certificate is served, and after 20 route changes, the
// controller's RSS and peak RSS (VmHWM) and HAProxy's (master and
// worker). The goal (issue 30): the controller <= 150 MiB.
//
// The objects are created once; each controller run then starts from a
// fresh HAProxy. HKS_BENCH_CONTROLLERS (label=binary [NAME=value...],...;
// default the binary built from this tree, "this") and HKS_BENCH_RUNS (default 1,
// each a round of the list, so binaries alternate) compare builds side
// by side on the same objects. HKS_BENCH_CONTROLLER_ENV (space-separated
// NAME=value, e.g. GODEBUG=gctrace=1) is added to each controller's
// environment; HKS_BENCH_LOGDIR keeps each controller's log there
// (label-run.log). HKS_BENCH_HEAPPROFILE writes each run's heap profile
// (path.label-run when several). HKS_BENCH_MEMORY_LIMIT is passed as the
// controller's --memory-limit.
//
//	HKS_TESTBIN_DIR=... go test -run '^$' -bench BenchmarkGatewayHTTPScaleRSS -benchtime 1x ./test/e2e/
func BenchmarkGatewayHTTPScaleRSS(b *testing.B) {
	if !inNetns(b, podAddrs...) {
		return
	}
	s := scaleObjects{routes: benchEnvInt("HKS_BENCH_ROUTES", 10000), services: benchEnvInt("HKS_BENCH_SERVICES", 5000), certs: benchEnvInt("HKS_BENCH_CERTS", 1000)}
	ctls := scaleControllers(b)
	kube, client, gc := benchGatewayAPI(b)
	s.kubeconfig, s.gc = kube.KubeconfigPath, gc
	ctx := context.Background()
	benchHTTPPod(b, client, "web-a", podAddrs[0], 8080) // s<i>'s endpoints point here too
	t0 := time.Now()
	parallel(b, s.services, func(i int) error { return scaleService(ctx, client, fmt.Sprintf("s%d", i)) })
	s.ca = testcert.CA(b, "scale CA")
	parallel(b, s.certs, func(i int) error {
		// Named under its listener's hostname (*.l<k>.example.com): a
		// listener serves the certificates of the names it accepts.
		sec, _ := rotationSecret(b, fmt.Sprintf("c%d", i), fmt.Sprintf("c%d.l%d.example.com", i, i/scalePerListener), s.ca)
		_, err := client.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{})
		return err
	})
	s.httpPort, s.httpsPort = haproxytest.FreePort(b), haproxytest.FreePort(b)
	ls := []gwv1.Listener{listener("http", gwv1.HTTPProtocolType, s.httpPort, "")}
	for k := 0; k*scalePerListener < s.certs; k++ {
		l := listener(fmt.Sprintf("https%d", k), gwv1.HTTPSProtocolType, s.httpsPort, fmt.Sprintf("*.l%d.example.com", k))
		l.TLS = &gwv1.ListenerTLSConfig{}
		for i := k * scalePerListener; i < min(s.certs, (k+1)*scalePerListener); i++ {
			l.TLS.CertificateRefs = append(l.TLS.CertificateRefs, gwv1.SecretObjectReference{Name: gwv1.ObjectName(fmt.Sprintf("c%d", i))})
		}
		ls = append(ls, l)
	}
	if _, err := gc.GatewayV1().Gateways(ns).Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "hks", Listeners: ls}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	parallel(b, s.routes, func(i int) error {
		name := fmt.Sprintf("r%d", i)
		_, err := gc.GatewayV1().HTTPRoutes(ns).Create(ctx, benchHTTPRoute(name, name+".example.com", fmt.Sprintf("s%d", i%s.services)), metav1.CreateOptions{})
		return err
	})
	b.Logf("%d HTTPRoutes, %d Services, %d certificates created in %s", s.routes, s.services, s.certs, time.Since(t0).Round(time.Second))
	runs := benchEnvInt("HKS_BENCH_RUNS", 1)
	for k := range runs {
		for _, c := range ctls {
			s.run(b, c, k, len(ctls)*runs > 1)
		}
	}
}

// scalePerListener is the API's limit of certificateRefs per listener.
const scalePerListener = 64

// scaleObjects is what BenchmarkGatewayHTTPScaleRSS created, for each run.
type scaleObjects struct {
	routes, services, certs int
	httpPort, httpsPort     int
	ca                      testcert.Cert
	kubeconfig              string
	gc                      gwclient.Interface
}

// scaleController is a controller binary under its label, and what it
// adds to its environment.
type scaleController struct {
	label, bin string
	env        []string
}

// haproxyBin is the HAProxy of c's runs in the Services benchmarks: the
// value of a HAPROXY_BIN entry among c's environment ("base=BIN
// HAPROXY_BIN=/path/haproxy" in HKS_BENCH_CONTROLLERS), else
// haproxytest.Bin(), so that one world times one controller on two
// HAProxy versions side by side.
func (c scaleController) haproxyBin() string {
	for _, e := range c.env {
		if v, ok := strings.CutPrefix(e, "HAPROXY_BIN="); ok && v != "" {
			return v
		}
	}
	return haproxytest.Bin()
}

// haproxyEnv is what c's runs add to HAProxy's environment: the value of
// each HAPROXY_ENV entry among c's environment ("thp=BIN
// HAPROXY_ENV=GLIBC_TUNABLES=glibc.malloc.hugetlb=1"), so that one world
// times HAProxy with and without a setting of its environment. An entry
// that is no NAME=VALUE is an error, not a run without it.
func (c scaleController) haproxyEnv() ([]string, error) {
	var out []string
	for _, e := range c.env {
		if v, ok := strings.CutPrefix(e, "HAPROXY_ENV="); ok {
			if name, _, ok := strings.Cut(v, "="); !ok || name == "" {
				return nil, fmt.Errorf("controller %s: HAPROXY_ENV=%q is no NAME=VALUE", c.label, v)
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// startHAProxy starts the HAProxy of c's runs (haproxyBin, haproxyEnv).
func (c scaleController) startHAProxy(b *testing.B, dir, cfg string) *haproxytest.Process {
	env, err := c.haproxyEnv()
	if err != nil {
		b.Fatal(err)
	}
	return haproxytest.StartWithEnv(b, c.haproxyBin(), env, dir, cfg)
}

// scaleControllers reads HKS_BENCH_CONTROLLERS, or builds this tree's.
func scaleControllers(b *testing.B) []scaleController {
	var out []scaleController
	for _, e := range strings.Split(os.Getenv("HKS_BENCH_CONTROLLERS"), ",") {
		if label, rest, ok := strings.Cut(strings.TrimSpace(e), "="); ok {
			f := strings.Fields(rest)
			out = append(out, scaleController{label, f[0], f[1:]})
		}
	}
	if len(out) > 0 {
		return out
	}
	bin := filepath.Join(b.TempDir(), "haproxy-k8s-sync")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/haproxy-k8s-sync").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return []scaleController{{"this", bin, nil}}
}

// run starts controller c (run k) with a fresh HAProxy, waits until the
// last route and certificate are served, changes 20 routes, and reports
// the memory; each run stops its controller and HAProxy.
func (s *scaleObjects) run(b *testing.B, c scaleController, k int, several bool) {
	ctx := context.Background()
	dir := b.TempDir()
	cfg := initHAProxy(b, dir)
	hap := haproxytest.Start(b, dir, cfg)
	defer hap.Kill(b)
	pprofAddr := fmt.Sprintf("127.0.0.1:%d", haproxytest.FreePort(b))
	args := []string{"run", "--mode=gateway", "--kubeconfig", s.kubeconfig, "--haproxy-config", cfg,
		"--haproxy-bin", haproxytest.Bin(), "--master-socket", hap.MasterSocket, "--stats-socket", hap.StatsSocket,
		"--state-file", filepath.Join(dir, "state"), "--bind-address", "127.0.0.1", "--metrics-address", "", "--udp=off",
		"--pprof-address", pprofAddr}
	if v := os.Getenv("HKS_BENCH_MEMORY_LIMIT"); v != "" { // --memory-limit, e.g. 130Mi
		args = append(args, "--memory-limit="+v)
	}
	ctl, logPath, name, t0 := startScaleController(b, c, k, dir, args)
	defer ctl.stop()
	rises, anonPeak, stop := watchPeak(ctl.Process.Pid, t0, logPath)
	defer stop()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	last := fmt.Sprintf("r%d.example.com", s.routes-1)
	if _, err := untilHTTP(hc, s.httpPort, last, "web-a", t0, 15*time.Minute); err != nil {
		b.Fatalf("%s: %v; controller log: %s", name, err, fileTail(logPath))
	}
	h := newHandshaker(fmt.Sprintf("127.0.0.1:%d", s.httpsPort), fmt.Sprintf("c%d.l%d.example.com", s.certs-1, (s.certs-1)/scalePerListener), s.ca)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		_, err := h.hello()
		if err == nil {
			break
		}
		if time.Now().After(deadline) { // the memory is measured all the same
			b.Errorf("%s: certificate c%d not served: %v", name, s.certs-1, err)
			break
		}
		time.Sleep(50 * time.Millisecond) // poll interval
	}
	synced := time.Since(t0)
	settledRSS, _ := rssKiB(ctl.Process.Pid)

	for i := range 20 { // changes: routes moved to web-a, and back to their Service in the next run
		name := fmt.Sprintf("r%d", i*(s.routes/20))
		rt, err := s.gc.GatewayV1().HTTPRoutes(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		to := backendRef("web-a", 1)
		if k%2 == 1 {
			to = backendRef(fmt.Sprintf("s%d", i*(s.routes/20)%s.services), 1)
		}
		rt.Spec.Rules[0].BackendRefs[0].BackendRef = to
		if _, err := s.gc.GatewayV1().HTTPRoutes(ns).Update(ctx, rt, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := untilHTTP(hc, s.httpPort, "r0.example.com", "web-a", time.Now(), 5*time.Minute); err != nil {
		b.Fatal(err)
	}
	mem := procMem(ctl.Process.Pid)
	rss, hwm := mem["VmRSS"], mem["VmHWM"]
	masterRSS, workerRSS, err := haproxyRSS(ctx, hap)
	if err != nil {
		b.Fatal(err)
	}
	saveHeapProfile(b, pprofAddr, name, several)
	suffix := logRises(b, name, several, rises)
	b.ReportMetric(mib(rss), "ctl-rss-MiB"+suffix)
	b.ReportMetric(mib(hwm), "ctl-peak-MiB"+suffix)
	b.ReportMetric(mib(anonPeak()), "ctl-anon-peak-MiB"+suffix)
	b.ReportMetric(mib(masterRSS+workerRSS), "haproxy-rss-MiB"+suffix)
	b.Logf("%s (%s): %d HTTPRoutes, %d Services, %d certificates, all served %s after the controller started: controller RSS %.1f MiB once served, %.1f MiB after 20 changes, peak %.1f MiB (its own, RssAnon: %.1f MiB at most; the binary's pages, RssFile: %.1f MiB at the end); HAProxy master %.1f + worker %.1f MiB; load %s",
		name, strings.Join(append([]string{c.bin}, c.env...), " "), s.routes, s.services, s.certs, synced.Round(100*time.Millisecond), mib(settledRSS), mib(rss), mib(hwm),
		mib(anonPeak()), mib(mem["RssFile"]), mib(masterRSS), mib(workerRSS), loadAvg())
}

// loadAvg is the kernel's load averages (1, 5, 15 minutes).
func loadAvg() string {
	f := strings.Fields(readFile("/proc/loadavg"))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// watchPeak samples pid's /proc status every 100 ms until stop is called
// (once or more)
// and returns, through rises, each rise of VmHWM of 4 MiB or more: when
// (from start), RssAnon and RssFile then (which of the two made it; the
// executable's pages by section), and
// the controller log's last line then, which says what
// it was doing when the peak was made; and, through anonPeak, the
// highest RssAnon sampled (KiB: the process's own memory, without the
// binary's file pages VmHWM also counts).
func watchPeak(pid int, start time.Time, logPath string) (rises func() string, anonPeak func() int64, stop func()) {
	var mu sync.Mutex
	var out []string
	var last, anon int64
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			m := procMem(pid)
			mu.Lock()
			anon = max(anon, m["RssAnon"])
			mu.Unlock()
			hwm := m["VmHWM"]
			if hwm < last+4*1024 {
				continue
			}
			last = hwm
			line := lastLine(readFile(logPath))
			if len(line) > 160 {
				line = line[:160]
			}
			file := fmt.Sprintf("%.1f MiB", float64(m["RssFile"])/1024)
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil {
				if secs, err := residentSections(pid, exe); err == nil { // residentsections_test.go
					file = residentLine(secs)
				}
			}
			mu.Lock()
			out = append(out, fmt.Sprintf("%s %.1f MiB (anon %.1f, file %s): %s", time.Since(start).Round(100*time.Millisecond), float64(hwm)/1024,
				float64(m["RssAnon"])/1024, file, line))
			mu.Unlock()
		}
	}()
	return func() string {
			mu.Lock()
			defer mu.Unlock()
			return strings.Join(out, "\n")
		}, func() int64 {
			mu.Lock()
			defer mu.Unlock()
			return anon
		}, sync.OnceFunc(func() { close(done) })
}

// lastLine is s's last line that is not empty.
func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// scaleService creates Service name (port 80) with one ready endpoint, the
// stand-in Pod web-a answers for.
func scaleService(ctx context.Context, client kubernetes.Interface, name string) error {
	if _, err := client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "tcp", Port: 80, Protocol: corev1.ProtocolTCP}}}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	return lab.ApplySlice(ctx, client, lab.SliceFor(ns, name, 8080, []lab.Endpoint{{IP: podAddrs[0], Node: "n1", Ready: true}}))
}

// saveURL writes the body of a GET of url to path.
func saveURL(url, path string) error {
	resp, err := http.Get(url) //nolint:noctx // a benchmark's one request
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

// fileTail is the end of the file at path (for a failure's message).
func fileTail(path string) string {
	b, _ := os.ReadFile(path)
	return tail(string(b), 40)
}
