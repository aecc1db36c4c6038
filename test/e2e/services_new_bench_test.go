package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// newSvcLabel marks the EndpointSlices of the Services a benchmark adds
// to the world, so that its own watch sees only them.
const newSvcLabel = "hks-bench-new"

// BenchmarkServicesScaleNew is issue 29's defining number end to end: in
// BenchmarkServicesScaleRSS's world (HKS_BENCH_SERVICES LoadBalancer
// Services, default 10,000, HKS_BENCH_ENDPOINTS endpoints each, a real
// kube-apiserver), once the controller (its binary, run's defaults but
// for the checks) serves them all, HKS_BENCH_NEW new Services (default
// 50) one at a time, each timed from its EndpointSlice's create
// returning to the first connection from the test's namespace to the
// Service's address answered by a stand-in on a node's nodePort through
// HAProxy (polled every 250 µs, HKS_BENCH_POLL: services_new_poll_test.go;
// deadline HKS_BENCH_NEW_DEADLINE seconds, default 60); then a burst of HKS_BENCH_BURST (default 100) created at
// once by a pool of HKS_BENCH_BURST_WRITERS writers (default 16; a list runs a burst for each in turn:
// services_new_burst_test.go), until all answer. HAProxy's reloads are counted across each
// part, and the controller's whole-run memory (VmHWM, RssAnon at most,
// RssFile: issue 29's peak <= 100 MiB) is reported as metrics. The write -> watch column is the test's own watch of the new
// EndpointSlices (the same apiserver's watch the controller's informer
// sees; the controller logs no event). Each listener mode of
// HKS_BENCH_MODES (default "tproxy,ports": tproxy with run's pool, then
// a frontend per port) runs with a fresh HAProxy and controller over the
// same objects, for each controller of HKS_BENCH_CONTROLLERS (a
// controller's HAPROXY_BIN entry, "head=BIN HAPROXY_BIN=PATH", runs its
// HAProxy: two versions side by side in one world; its HAPROXY_ENV
// entries, "thp=BIN HAPROXY_ENV=NAME=VALUE", go into HAProxy's
// environment). With
// HKS_BENCH_RESTART=1 each run ends with its restarts timed
// (services_restart_bench_test.go).
//
//	HKS_TESTBIN_DIR=... go test -run '^$' -bench 'BenchmarkServicesScaleNew$' -benchtime 1x -timeout 60m ./test/e2e/
func BenchmarkServicesScaleNew(b *testing.B) {
	if !inNetns(b, tproxyVIP) {
		return
	}
	services, endpoints := benchEnvInt("HKS_BENCH_SERVICES", 10000), benchEnvInt("HKS_BENCH_ENDPOINTS", 5)
	w := newSvcWorld{services: services, endpoints: endpoints, one: benchEnvInt("HKS_BENCH_NEW", 50),
		burst: benchEnvInt("HKS_BENCH_BURST", 100), deadline: time.Duration(benchEnvInt("HKS_BENCH_NEW_DEADLINE", 60)) * time.Second}
	modes := strings.Split(os.Getenv("HKS_BENCH_MODES"), ",")
	if os.Getenv("HKS_BENCH_MODES") == "" {
		modes = []string{"tproxy", "ports"}
	}
	ctls := scaleControllers(b)
	w.writers = burstWriters(b)
	bare := envShapes(b, "HKS_BENCH_BURST_SHAPES")
	w.ctlShapes = envShapes(b, "HKS_BENCH_BURST_SHAPES_CTL")
	kube := svcScaleWorld(b, services, endpoints, w.burst*len(bare)+len(modes)*len(ctls)*(w.one+w.burst*(len(w.writers)+len(w.ctlShapes))))
	w.kube, w.client, w.kubeconfig = kube, kube.Client(b), kube.KubeconfigPath
	w.watch = watchNewSlices(b, w.client)
	// The shapes with no controller running (services_burst_shapes_test.go).
	w.shapeBursts(b, "bare", bare, 0)
	for _, c := range ctls {
		for k, m := range modes {
			w.run(b, c, k, m == "tproxy")
		}
	}
}

// newSvcWorld is the world of BenchmarkServicesScaleNew and the next
// new Service's number.
type newSvcWorld struct {
	services, endpoints, one, burst int
	writers                         []int // each burst's writers (burstWriters)
	ctlShapes                       []burstShape
	static                          int // explicit ClusterIPs given so far (staticIP)
	kube                            *kubeapi.Server
	deadline                        time.Duration
	client                          kubernetes.Interface
	kubeconfig                      string
	watch                           *sliceSeen
	next                            int
}

// run starts controller c (its run nth: its log is label-nth+1.log under
// HKS_BENCH_LOGDIR) with a fresh HAProxy in one listener mode, waits
// until the world is served, then times the new Services.
func (w *newSvcWorld) run(b *testing.B, c scaleController, nth int, tproxy bool) {
	mode := "ports"
	if tproxy {
		mode = "tproxy+pool"
	}
	dir := b.TempDir()
	cfg := initHAProxyFor(b, dir, listening{tproxy: tproxy})
	hap := c.startHAProxy(b, dir, cfg)
	defer hap.Kill(b)
	pprofAddr := fmt.Sprintf("127.0.0.1:%d", haproxytest.FreePort(b))
	args := svcScaleArgs(w.kubeconfig, cfg, dir, hap, tproxy, pprofAddr)
	ctl, logPath, name, t0 := startScaleController(b, c, nth, dir, args)
	defer ctl.stop()
	// The whole run's memory (issue 29's peak: the start, the new
	// Services one at a time and the burst): VmHWM is the kernel's own
	// high-water mark; RssAnon at most is sampled every 100 ms.
	rises, anonPeak, stopPeak := watchPeak(ctl.Process.Pid, t0, logPath)
	defer stopPeak()
	served, err := untilServicesServed(hap.StatsSocket, w.services, 15*time.Minute)
	if err != nil {
		b.Fatalf("%s %s: %v; controller log: %s", name, mode, err, fileTail(logPath))
	}
	b.Logf("%s %s: %d Services served %s after the controller started (load %s)", name, mode, w.services, served.Sub(t0).Round(100*time.Millisecond), loadAvg())
	addr := "127.0.0.1"
	if tproxy {
		addr = tproxyVIP
	}
	reloads := benchReloads(b, hap)
	// A few seconds for the passes after the first (status writes, the
	// pool's growth) to end before the timed part.
	time.Sleep(5 * time.Second) // not a synchronisation: the reloads are counted from here
	// With HKS_BENCH_HEAPPROFILE=PATH: the controller's heap now and after
	// the burst (PATH.NAME-MODE-served, PATH.NAME-MODE-burst), to diff
	// what the new Services' passes keep (issue 29's whole-run peak).
	saveHeapProfile(b, pprofAddr, name+"-"+mode+"-served", true)
	r0 := reloads()
	oneFrom := time.Now()
	var lat, toWatch, fromWatch []time.Duration
	failed := 0
	stand := w.standIns()
	polls := newPolls(b)
	for i := range w.one {
		k := w.next
		w.next++
		written, err := w.create(k, stand)
		if err != nil {
			b.Fatal(err)
		}
		every := polls.every(i)
		a, err := lab.UntilAnswered(w.target(addr, k), written, w.deadline, every)
		if err != nil {
			failed++
			b.Logf("%s %s: new Service %d: %v", name, mode, k, err)
			continue
		}
		got := a.At
		lat = append(lat, got.Sub(written))
		polls.add(i, got.Sub(written), a)
		if seen, ok := w.watch.at(k); ok {
			toWatch, fromWatch = append(toWatch, seen.Sub(written)), append(fromWatch, got.Sub(seen))
		}
		// The wall clock, to read beside the controller's log.
		b.Logf("%s %s: new Service %d: slice written %s, answered %.1f ms later (polled every %s: %d probes, period %s)", name, mode, k,
			written.UTC().Format("15:04:05.000"), float64(got.Sub(written).Microseconds())/1000, every, a.Probes, a.Period.Round(time.Microsecond))
	}
	closeAll(stand)
	r1 := reloads()
	burstFrom := time.Now()
	var bursts []burstRun
	for k, writers := range w.writers {
		if k > 0 {
			// The last burst's status writes end before the next.
			time.Sleep(3 * time.Second) // not a synchronisation: each burst counts its own reloads
		}
		rb := reloads()
		load := w.startLoad(b, fmt.Sprintf("%s-%s-burst-w%d-%d", name, mode, writers, k), ctl.Process.Pid)
		bt := w.runBurst(b, addr, writers)
		acc := load.stop(b)
		bursts = append(bursts, burstRun{writers: writers, burstTimes: bt, reloads: reloads() - rb, load: acc})
	}
	r2 := reloads()
	mem := procMem(ctl.Process.Pid)
	if secs, err := residentSections(ctl.Process.Pid, ctl.Path); err == nil { // residentsections_test.go
		b.Logf("%s %s: the controller's executable at the end (RssFile by section): %s", name, mode, residentLine(secs))
	} else {
		b.Logf("%s %s: the controller's executable pages not read: %v", name, mode, err)
	}
	cpu := procCPU(ctl.Process.Pid)
	hapMaster, hapWorkers, hapErr := haproxyRSS(context.Background(), hap)
	stopPeak()
	saveHeapProfile(b, pprofAddr, name+"-"+mode+"-burst", true)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	line := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "none"
		}
		return fmt.Sprintf("p50 %.1f / p99 %.1f / max %.1f ms", ms(pct(ds, 0.5)), ms(pct(ds, 0.99)), ms(maxDur(ds)))
	}
	b.Logf("%s %s at %d Services: %d new Services one at a time (%d not answered within %s), EndpointSlice written -> first connection answered: %s; %d reloads",
		name, mode, w.services, w.one, failed, w.deadline, line(lat), r1-r0)
	b.Logf("%s %s: split: written -> the test's watch sees the slice %s; watch -> answered %s", name, mode, line(toWatch), line(fromWatch))
	polls.log(b, name+" "+mode, line)
	w.logBursts(b, name+" "+mode, mode, bursts, line)
	if len(lat) > 0 {
		b.ReportMetric(ms(pct(lat, 0.5)), mode+"-p50-ms")
		b.ReportMetric(ms(pct(lat, 0.99)), mode+"-p99-ms")
	}
	b.ReportMetric(float64(r2-r0), mode+"-reloads")
	anon := max(anonPeak(), mem["RssAnon"])
	b.ReportMetric(mib(mem["VmHWM"]), mode+"-ctl-peak-MiB")
	b.ReportMetric(mib(anon), mode+"-ctl-anon-peak-MiB")
	b.ReportMetric(mib(mem["RssFile"]), mode+"-ctl-file-MiB")
	b.ReportMetric(cpu.Seconds(), mode+"-ctl-cpu-s")
	if hapErr != nil {
		b.Logf("%s %s: HAProxy's RSS not read: %v", name, mode, hapErr)
	} else {
		b.ReportMetric(float64(hapMaster+hapWorkers)/1024, mode+"-haproxy-rss-MiB")
		b.Logf("%s %s: the controller's CPU (utime+stime) for the whole run %.2f s; HAProxy's RSS at the end: master %.1f MiB, workers %.1f MiB",
			name, mode, cpu.Seconds(), float64(hapMaster)/1024, float64(hapWorkers)/1024)
	}
	b.Logf("%s %s: served at %s, the new Services from %s, the burst from %s (from the controller's start)",
		name, mode, served.Sub(t0).Round(100*time.Millisecond), oneFrom.Sub(t0).Round(100*time.Millisecond), burstFrom.Sub(t0).Round(100*time.Millisecond))
	logRises(b, name+" "+mode, false, rises)
	b.Logf("%s %s: the controller's whole run (start, %d new Services, burst of %d): peak VmHWM %.1f MiB (RssAnon at most %.1f MiB; RssFile %.1f MiB at the end; RSS %.1f MiB at the end)",
		name, mode, w.one, w.burst, mib(mem["VmHWM"]), mib(anon), mib(mem["RssFile"]), mib(mem["VmRSS"]))
	// The shapes with the controller serving (services_burst_shapes_test.go).
	w.shapeBursts(b, name+"-"+mode, w.ctlShapes, ctl.Process.Pid)
	w.restarts(b, c, nth, ctl, hap, args, mode)
}

// burstTimes is what runBurst measured.
type burstTimes struct {
	all    time.Duration // from the first write until every Service answered
	failed int           // Services not created or not answered
	// own: each answered Service's time from its EndpointSlice written
	// (the API call returned) to its first answer, its prober started
	// right then: what the burst's Service waited for beside the others.
	own []time.Duration
	// writes: from the first write until the last create returned (the
	// apiserver takes the creates one by one); afterLast: from then until
	// every Service answered (the controller's part, with no failure).
	writes, afterLast time.Duration
}

// runBurst creates w.burst new Services with writers writers
// (writeBurst; 0: one per Service) and times them (burstTimes): each
// Service polled by a goroutine of its own, its prober started as soon
// as its own creates returned (one loop over all the pending ones took a
// round of up to 100 probes between two probes of one Service, and
// probes started after every create returned counted the others'
// creates in an early Service's own time). all is from the first write,
// writes the apiserver's part and afterLast the controller's (issue 29).
func (w *newSvcWorld) runBurst(b *testing.B, addr string, writers int) burstTimes {
	stand := w.standIns()
	defer closeAll(stand)
	first := w.next
	w.next += w.burst
	start := time.Now()
	written := make([]time.Time, w.burst)
	answered := make([]time.Time, w.burst)
	errs := writeBurst(w.burst, writers, func(i int) (time.Time, error) {
		return w.create(first+i, stand)
	}, func(i int, at time.Time) {
		written[i] = at
		for time.Since(start) < w.deadline { // bounded by the deadline
			if _, err := lab.Probe(w.target(addr, first+i), 200*time.Millisecond); err == nil {
				answered[i] = time.Now()
				return
			}
			time.Sleep(time.Millisecond) // poll interval
		}
	})
	for i, err := range errs {
		if err != nil {
			b.Logf("burst: new Service %d not created: %v", first+i, err) // counted as not answered
		}
	}
	var own []time.Duration
	var last time.Time
	notAnswered := 0
	for i, at := range answered {
		if at.IsZero() {
			notAnswered++
			continue
		}
		last = later(last, at)
		own = append(own, at.Sub(written[i]))
	}
	var lastWrite time.Time
	for _, at := range written {
		lastWrite = later(lastWrite, at)
	}
	bt := burstTimes{own: own, writes: lastWrite.Sub(start)}
	if notAnswered > 0 {
		bt.all, bt.failed = time.Since(start), notAnswered
		return bt
	}
	bt.all, bt.afterLast = last.Sub(start), last.Sub(lastWrite)
	return bt
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Service k's numbers: its port after the world's, its nodePort and
// healthCheckNodePort above the world's (svcScaleWorld's room).
func (w *newSvcWorld) port(k int) int     { return svcScalePort + w.services + k }
func (w *newSvcWorld) nodePort(k int) int { return svcScaleNodePort + 2*w.services + 200 + 2*k }
func (w *newSvcWorld) node(k, j int) int  { return (k + j) % svcScaleNodes }

func (w *newSvcWorld) target(addr string, k int) string {
	return net.JoinHostPort(addr, strconv.Itoa(w.port(k)))
}

// standIns are the nodes' stand-ins (nothing listening yet).
func (w *newSvcWorld) standIns() []*lab.NodeServer {
	out := make([]*lab.NodeServer, svcScaleNodes)
	for n := range out {
		out[n] = lab.NewNodeServer(fmt.Sprintf("node-%02d", n), fmt.Sprintf("127.77.0.%d", n+1))
	}
	return out
}

func closeAll(s []*lab.NodeServer) {
	for _, n := range s {
		n.Close()
	}
}

// create opens new Service k's nodePort on its endpoints' nodes, writes
// the Service, then its EndpointSlice, and returns when that write
// returned.
func (w *newSvcWorld) create(k int, stand []*lab.NodeServer) (time.Time, error) {
	for j := range w.endpoints {
		if err := stand[w.node(k, j)].Listen(w.nodePort(k)); err != nil {
			return time.Time{}, err
		}
	}
	ctx := context.Background()
	svc := w.service(k)
	if _, err := w.client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return time.Time{}, fmt.Errorf("Service %s: %w", svc.Name, err)
	}
	if _, err := w.client.DiscoveryV1().EndpointSlices(ns).Create(ctx, w.slice(k), metav1.CreateOptions{}); err != nil {
		return time.Time{}, fmt.Errorf("EndpointSlice of %s: %w", svc.Name, err)
	}
	return time.Now(), nil
}

func svcName(k int) string { return fmt.Sprintf("new-%05d", k) }

// service is new Service k: a LoadBalancer of our class,
// externalTrafficPolicy Local, its nodePort and healthCheckNodePort
// chosen by the test (w.nodePort).
func (w *newSvcWorld) service(k int) *corev1.Service {
	class := desired.DefaultClass
	name := svcName(k)
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class, Selector: map[string]string{"app": name},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal, HealthCheckNodePort: int32(w.nodePort(k) + 1),
			Ports: []corev1.ServicePort{{Name: "tcp", Port: int32(w.port(k)), NodePort: int32(w.nodePort(k)), Protocol: corev1.ProtocolTCP}}},
	}
}

// slice is new Service k's EndpointSlice: w.endpoints ready endpoints on
// consecutive nodes, labelled for the test's own watch (newSvcLabel).
func (w *newSvcWorld) slice(k int) *discoveryv1.EndpointSlice {
	eps := make([]lab.Endpoint, w.endpoints)
	for j := range eps {
		i := k*16 + j + 1
		eps[j] = lab.Endpoint{IP: fmt.Sprintf("10.250.%d.%d", (i>>8)&255, i&255), Node: fmt.Sprintf("node-%02d", w.node(k, j)), Ready: true}
	}
	sl := lab.SliceFor(ns, svcName(k), 8080, eps)
	sl.Labels[newSvcLabel] = strconv.Itoa(k)
	return sl
}

// sliceSeen records when the test's own watch first saw each new
// Service's EndpointSlice.
type sliceSeen struct {
	mu   sync.Mutex
	seen map[int]time.Time
}

func watchNewSlices(b *testing.B, client kubernetes.Interface) *sliceSeen {
	s := &sliceSeen{seen: map[int]time.Time{}}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = newSvcLabel }))
	inf := f.Discovery().V1().EndpointSlices().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		now := time.Now()
		es, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			return
		}
		k, err := strconv.Atoi(es.Labels[newSvcLabel])
		if err != nil {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.seen[k]; !ok {
			s.seen[k] = now
		}
	}}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return s
}

func (s *sliceSeen) at(k int) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.seen[k]
	return t, ok
}
