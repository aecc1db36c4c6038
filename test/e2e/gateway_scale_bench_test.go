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

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// rssKiB reads VmRSS and VmHWM (KiB) of pid from /proc.
func rssKiB(pid int) (rss, hwm int64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			hwm = n
		}
	}
	return rss, hwm
}

// BenchmarkGatewayHTTPScaleRSS: the controller (its binary, a process of
// its own) and HAProxy at HKS_BENCH_ROUTES HTTPRoutes (default 10,000; on
// one HTTP listener, each its own host) to HKS_BENCH_SERVICES Services
// (default 5,000; one endpoint each) and HKS_BENCH_CERTS certificates
// (default 1,000; Secrets named by 16 HTTPS listeners on one port): once
// every route and certificate is served, and after 20 route changes, the
// controller's RSS and peak RSS (VmHWM) and HAProxy's (master and
// worker). The goal (issue 30): the controller <= 150 MiB.
// HKS_BENCH_HEAPPROFILE writes the controller's heap profile there.
// HKS_BENCH_MEMORY_LIMIT is passed as the controller's --memory-limit.
//
//	HKS_TESTBIN_DIR=... go test -run '^$' -bench BenchmarkGatewayHTTPScaleRSS -benchtime 1x ./test/e2e/
func BenchmarkGatewayHTTPScaleRSS(b *testing.B) {
	if !inNetns(b, podAddrs...) {
		return
	}
	routes, services, certs := benchEnvInt("HKS_BENCH_ROUTES", 10000), benchEnvInt("HKS_BENCH_SERVICES", 5000), benchEnvInt("HKS_BENCH_CERTS", 1000)
	bin := filepath.Join(b.TempDir(), "haproxy-k8s-sync")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/haproxy-k8s-sync").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	kube, client, gc := benchGatewayAPI(b)
	ctx := context.Background()
	benchHTTPPod(b, client, "web-a", podAddrs[0], 8080) // s<i>'s endpoints point here too
	t0 := time.Now()
	parallel(b, services, func(i int) error { return scaleService(ctx, client, fmt.Sprintf("s%d", i)) })
	const perListener = 64 // the API's limit of certificateRefs
	ca := testcert.CA(b, "scale CA")
	parallel(b, certs, func(i int) error {
		// Named under its listener's hostname (*.l<k>.example.com): a
		// listener serves the certificates of the names it accepts.
		s, _ := rotationSecret(b, fmt.Sprintf("c%d", i), fmt.Sprintf("c%d.l%d.example.com", i, i/perListener), ca)
		_, err := client.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
		return err
	})
	httpPort, httpsPort := haproxytest.FreePort(b), haproxytest.FreePort(b)
	ls := []gwv1.Listener{listener("http", gwv1.HTTPProtocolType, httpPort, "")}
	for k := 0; k*perListener < certs; k++ {
		l := listener(fmt.Sprintf("https%d", k), gwv1.HTTPSProtocolType, httpsPort, fmt.Sprintf("*.l%d.example.com", k))
		l.TLS = &gwv1.ListenerTLSConfig{}
		for i := k * perListener; i < min(certs, (k+1)*perListener); i++ {
			l.TLS.CertificateRefs = append(l.TLS.CertificateRefs, gwv1.SecretObjectReference{Name: gwv1.ObjectName(fmt.Sprintf("c%d", i))})
		}
		ls = append(ls, l)
	}
	if _, err := gc.GatewayV1().Gateways(ns).Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "hks", Listeners: ls}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	parallel(b, routes, func(i int) error {
		name := fmt.Sprintf("r%d", i)
		_, err := gc.GatewayV1().HTTPRoutes(ns).Create(ctx, benchHTTPRoute(name, name+".example.com", fmt.Sprintf("s%d", i%services)), metav1.CreateOptions{})
		return err
	})
	created := time.Since(t0)

	dir := b.TempDir()
	cfg := initHAProxy(b, dir)
	hap := haproxytest.Start(b, dir, cfg)
	pprofAddr := fmt.Sprintf("127.0.0.1:%d", haproxytest.FreePort(b))
	ctl := exec.Command(bin, "run", "--mode=gateway", "--kubeconfig", kube.KubeconfigPath, "--haproxy-config", cfg,
		"--haproxy-bin", haproxytest.Bin(), "--master-socket", hap.MasterSocket, "--stats-socket", hap.StatsSocket,
		"--state-file", filepath.Join(dir, "state"), "--bind-address", "127.0.0.1", "--metrics-address", "", "--udp=off",
		"--pprof-address", pprofAddr)
	if v := os.Getenv("HKS_BENCH_MEMORY_LIMIT"); v != "" { // --memory-limit, e.g. 130Mi
		ctl.Args = append(ctl.Args, "--memory-limit="+v)
	}
	logf, err := os.Create(filepath.Join(dir, "controller.log"))
	if err != nil {
		b.Fatal(err)
	}
	ctl.Stdout, ctl.Stderr = logf, logf
	t0 = time.Now()
	if err := ctl.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = ctl.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = ctl.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = ctl.Process.Kill()
			<-done
		}
		logf.Close()
	})
	rises := watchPeak(b, ctl.Process.Pid, t0, filepath.Join(dir, "controller.log"))
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	last := fmt.Sprintf("r%d.example.com", routes-1)
	if _, err := untilHTTP(c, httpPort, last, "web-a", t0, 15*time.Minute); err != nil {
		b.Fatalf("%v; controller log: %s", err, fileTail(filepath.Join(dir, "controller.log")))
	}
	h := newHandshaker(fmt.Sprintf("127.0.0.1:%d", httpsPort), fmt.Sprintf("c%d.l%d.example.com", certs-1, (certs-1)/perListener), ca)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		_, err := h.hello()
		if err == nil {
			break
		}
		if time.Now().After(deadline) { // the memory is measured all the same
			b.Errorf("certificate c%d not served: %v", certs-1, err)
			break
		}
		time.Sleep(50 * time.Millisecond) // poll interval
	}
	synced := time.Since(t0)
	settledRSS, _ := rssKiB(ctl.Process.Pid)

	for i := range 20 { // changes: routes moved to another Service
		name := fmt.Sprintf("r%d", i*(routes/20))
		rt, err := gc.GatewayV1().HTTPRoutes(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		rt.Spec.Rules[0].BackendRefs[0].BackendRef = backendRef("web-a", 1)
		if _, err := gc.GatewayV1().HTTPRoutes(ns).Update(ctx, rt, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := untilHTTP(c, httpPort, "r0.example.com", "web-a", time.Now(), 5*time.Minute); err != nil {
		b.Fatal(err)
	}
	rss, hwm := rssKiB(ctl.Process.Pid)
	p, err := haproxy.NewMaster(hap.MasterSocket).ShowProc(ctx)
	if err != nil {
		b.Fatal(err)
	}
	masterRSS, _ := rssKiB(hap.MasterPID())
	var workerRSS int64
	for _, w := range p.Workers {
		r, _ := rssKiB(w)
		workerRSS += r
	}
	if path := os.Getenv("HKS_BENCH_HEAPPROFILE"); path != "" {
		if err := saveURL("http://"+pprofAddr+"/debug/pprof/heap", path); err != nil {
			b.Errorf("heap profile: %v", err)
		}
	}
	mib := func(kib int64) float64 { return float64(kib) / 1024 }
	b.Logf("the controller's peak RSS as it rose (from its start; its log's last line then):\n%s", rises())
	b.ReportMetric(mib(rss), "ctl-rss-MiB")
	b.ReportMetric(mib(hwm), "ctl-peak-MiB")
	b.ReportMetric(mib(masterRSS+workerRSS), "haproxy-rss-MiB")
	b.Logf("%d HTTPRoutes, %d Services, %d certificates (created in %s; all served %s after the controller started): controller RSS %.1f MiB once served, %.1f MiB after 20 changes, peak %.1f MiB; HAProxy master %.1f + worker %.1f MiB",
		routes, services, certs, created.Round(time.Second), synced.Round(time.Second), mib(settledRSS), mib(rss), mib(hwm), mib(masterRSS), mib(workerRSS))
}

// watchPeak samples pid's VmHWM every 100 ms until the benchmark ends and
// returns, through the func it returns, each rise of 4 MiB or more: when
// (from start) and the controller log's last line then, which says what
// it was doing when the peak was made.
func watchPeak(b *testing.B, pid int, start time.Time, logPath string) func() string {
	var mu sync.Mutex
	var out []string
	var last int64
	done := make(chan struct{})
	b.Cleanup(func() { close(done) })
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			_, hwm := rssKiB(pid)
			if hwm < last+4*1024 {
				continue
			}
			last = hwm
			line := lastLine(readFile(logPath))
			if len(line) > 160 {
				line = line[:160]
			}
			mu.Lock()
			out = append(out, fmt.Sprintf("%s %.1f MiB: %s", time.Since(start).Round(100*time.Millisecond), float64(hwm)/1024, line))
			mu.Unlock()
		}
	}()
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(out, "\n")
	}
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
