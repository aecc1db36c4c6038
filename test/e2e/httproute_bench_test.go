package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/gwcrd"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// benchEnvInt is the benchmark setting in the environment variable name,
// or def.
func benchEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchHTTPPod serves HTTP at ip:port answering every request with name,
// and makes it Service name's one endpoint (port 80).
func benchHTTPPod(b *testing.B, client kubernetes.Interface, name, ip string, port int32) {
	ln, err := net.Listen("tcp", fmt.Sprintf("%s:%d", ip, port))
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, name) }),
		ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	ctx := context.Background()
	if _, err := client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "tcp", Port: 80, Protocol: corev1.ProtocolTCP}}}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := lab.ApplySlice(ctx, client, lab.SliceFor(ns, name, port, []lab.Endpoint{{IP: ip, Node: "n1", Ready: true}})); err != nil {
		b.Fatal(err)
	}
}

// benchHTTPRoute is HTTPRoute name: host, every path to Service svc.
func benchHTTPRoute(name, host, svc string) *gwv1.HTTPRoute {
	return &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: parentRef("http")},
			Hostnames: []gwv1.Hostname{gwv1.Hostname(host)},
			Rules:     []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: backendRef(svc, 1)}}}}}}
}

// httpAnswer is the status and body of one GET for host through port
// (no keep-alive: each probe a new connection).
func httpAnswer(c *http.Client, port int, host string) (int, string, error) {
	return httpAnswerAt(c, "127.0.0.1", port, host)
}

// httpAnswerAt is httpAnswer through ip (serviceIP(): the suite's
// address in either listener mode).
func httpAnswerAt(c *http.Client, ip string, port int, host string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+net.JoinHostPort(ip, strconv.Itoa(port))+"/", nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// untilHTTP polls host through port until a request is answered 200 by
// want, and returns how long after start that was; on timeout the last
// answer seen.
func untilHTTP(c *http.Client, port int, host, want string, start time.Time, deadline time.Duration) (time.Duration, error) {
	var last string
	for time.Since(start) < deadline {
		code, body, err := httpAnswer(c, port, host)
		if err == nil && code == http.StatusOK && body == want {
			return time.Since(start), nil
		}
		last = fmt.Sprintf("%d %q %v", code, body, err)
		time.Sleep(2 * time.Millisecond) // poll interval
	}
	return 0, fmt.Errorf("%s not answered 200 by %s within %s; last: %s", host, want, deadline, last)
}

// BenchmarkHTTPRoutePropagation: at N existing HTTPRoutes on one HTTP
// listener (HKS_BENCH_ROUTES, default 5,000; each its own host, to
// Service web-a), the time from an API write to the first 200 through a
// real HAProxy for it: a new HTTPRoute (to web-b), and an existing one
// moved to web-b (HKS_BENCH_CHANGES of each, default 40), one after the
// other; p50/p99 of each and the reloads they took (the goal: 0). The
// first 200 is detected by staggered probers on kept connections
// (httpprobe_test.go; HKS_BENCH_PROBE=old: a connection every 2 ms).
//
//	HKS_TESTBIN_DIR=... go test -run '^$' -bench BenchmarkHTTPRoutePropagation -benchtime 1x ./test/e2e/
func BenchmarkHTTPRoutePropagation(b *testing.B) {
	if !inNetns(b, podAddrs...) {
		return
	}
	n, changes := benchEnvInt("HKS_BENCH_ROUTES", 5000), benchEnvInt("HKS_BENCH_CHANGES", 40)
	kube, client, gc := benchGatewayAPI(b)
	ctx := context.Background()
	benchHTTPPod(b, client, "web-a", podAddrs[0], 8080)
	benchHTTPPod(b, client, "web-b", podAddrs[1], 8080)
	port := haproxytest.FreePort(b)
	if _, err := gc.GatewayV1().Gateways(ns).Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "hks", Listeners: []gwv1.Listener{listener("http", gwv1.HTTPProtocolType, port, "")}}},
		metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	createRoutes(b, gc, n)
	// web-b has a route from the start: its backend is there, so a
	// route to it needs no new backend (a reload without a pool).
	if _, err := gc.GatewayV1().HTTPRoutes(ns).Create(ctx, benchHTTPRoute("seed-b", "seed-b.example.com", "web-b"), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	created := time.Since(t0)
	// At debug every pass logs its "update" line: the passes are counted;
	// in JSON for its times at full precision (the stages).
	hap, log := benchControllerHAProxy(b, kube, "--mode=gateway", "--log-level", "debug", "--log-format", "json")
	passes := func() int { return strings.Count(log.String(), `"msg":"update"`) }
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	t0 = time.Now()
	if _, err := untilHTTP(c, port, fmt.Sprintf("r%d.example.com", n-1), "web-a", t0, 10*time.Minute); err != nil {
		b.Fatal(err)
	}
	synced := time.Since(t0)
	reloads := benchReloads(b, hap)

	defer cpuProfile(b)() // the changes only
	// The passes so far, once the first statuses are written and the
	// controller idle.
	passes0 := idlePasses(passes, time.Second, time.Minute)
	if path := os.Getenv("HKS_BENCH_MEMPROFILE"); path != "" { // what the changes allocate: pprof -base path.base path
		writeHeapProfile(b, path+".base")
		defer writeHeapProfile(b, path)
	}
	before := reloads()
	// The changes' first 200 detected by staggered probers on kept
	// connections (httpprobe_test.go).
	probes := newHTTPProbes(port)
	defer probes.close()
	var added, moved []time.Duration
	var addedAt, movedAt []change
	events := watchRoutes(b, gc)
	for i := range changes {
		name := fmt.Sprintf("new%d", i)
		start := time.Now()
		if _, err := gc.GatewayV1().HTTPRoutes(ns).Create(ctx, benchHTTPRoute(name, name+".example.com", "web-b"), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		written := time.Now()
		d, err := probes.until(name+".example.com", "web-b", start, time.Minute)
		if err != nil {
			b.Fatalf("new route %d: %v", i, err)
		}
		added = append(added, d)
		seen, _ := events.first(name, start, 10*time.Second)
		addedAt = append(addedAt, change{start: start, written: written, seen: seen, served: start.Add(d)})
	}
	addReloads := reloads() - before
	before = reloads()
	for i := range changes {
		name := fmt.Sprintf("r%d", i*(n/changes))
		var start, written time.Time
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			rt, err := gc.GatewayV1().HTTPRoutes(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			rt.Spec.Rules[0].BackendRefs[0].BackendRef = backendRef("web-b", 1)
			start = time.Now()
			_, err = gc.GatewayV1().HTTPRoutes(ns).Update(ctx, rt, metav1.UpdateOptions{})
			written = time.Now()
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		d, err := probes.until(name+".example.com", "web-b", start, time.Minute)
		if err != nil {
			b.Fatalf("route %s moved: %v", name, err)
		}
		moved = append(moved, d)
		seen, _ := events.first(name, start, 10*time.Second)
		movedAt = append(movedAt, change{start: start, written: written, seen: seen, served: start.Add(d)})
	}
	moveReloads := reloads() - before
	// The passes of the changes, once the last one's status is written
	// and the controller idle.
	perChange := float64(idlePasses(passes, time.Second, time.Minute)-passes0) / float64(2*changes)
	propagation{kind: "HTTPRoutes", n: n, created: created, synced: synced, added: added, moved: moved,
		addReloads: addReloads, moveReloads: moveReloads, perChange: perChange}.report(b, log)
	probes.report(b)
	ps := runtimePasses(log.String())
	if path := os.Getenv("HKS_BENCH_LOG"); path != "" { // the controller's log, for its passes' fields
		if err := os.WriteFile(path, []byte(log.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	reportStages(b, "new", stages(addedAt, ps))
	reportStages(b, "moved", stages(movedAt, ps))
}

// writeHeapProfile writes the heap profile (allocations since the start
// included) to path.
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// createRoutes creates HTTPRoutes r0..r<n-1> (host r<i>.example.com, to
// web-a), eight writers at once; the first error fails b.
func createRoutes(b *testing.B, gc gwclient.Interface, n int) {
	parallel(b, n, func(i int) error {
		name := "r" + strconv.Itoa(i)
		_, err := gc.GatewayV1().HTTPRoutes(ns).Create(context.Background(), benchHTTPRoute(name, name+".example.com", "web-a"), metav1.CreateOptions{})
		return err
	})
}

// parallel runs fn(0..n-1) on eight goroutines, each taking the next
// number in turn; the first error fails b.
func parallel(b *testing.B, n int, fn func(i int) error) {
	var next atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && first.Load() == nil; i = int(next.Add(1) - 1) {
				if err := fn(i); err != nil {
					first.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	if err := first.Load(); err != nil {
		b.Fatal(*err)
	}
}

// benchGatewayAPI starts a kube-apiserver with every Gateway API CRD and
// our GatewayClass hks, and returns it and its clients.
func benchGatewayAPI(b *testing.B) (*kubeapi.Server, kubernetes.Interface, gwclient.Interface) {
	kube := kubeapi.Start(b)
	gwcrd.InstallAll(b, kube.Config)
	client := kube.Client(b)
	gc, err := gwclient.NewForConfig(kube.Config)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := gc.GatewayV1().GatewayClasses().Create(context.Background(), &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "hks"},
		Spec: gwv1.GatewayClassSpec{ControllerName: gateway.ControllerName}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	return kube, client, gc
}

// idlePasses waits until passes stays the same for quiet (at most
// bound) and returns it.
func idlePasses(passes func() int, quiet, bound time.Duration) int {
	start := time.Now()
	n, since := passes(), time.Now()
	for time.Since(since) < quiet && time.Since(start) < bound {
		time.Sleep(50 * time.Millisecond) // poll interval
		if m := passes(); m != n {
			n, since = m, time.Now()
		}
	}
	return n
}

// benchReloads returns a function counting the reloads of hap's master.
func benchReloads(b *testing.B, hap *haproxytest.Process) func() int {
	master := haproxy.NewMaster(hap.MasterSocket)
	return func() int {
		p, err := master.ShowProc(context.Background())
		if err != nil {
			b.Fatalf("show proc: %v", err)
		}
		return p.Reloads
	}
}

// cpuProfile writes the process's CPU profile, until the function it
// returns is called, to HKS_BENCH_CPUPROFILE (unset: nothing).
func cpuProfile(b *testing.B) (stop func()) {
	path := os.Getenv("HKS_BENCH_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
