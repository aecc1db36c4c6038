package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// BenchmarkIngressPropagation: at N existing Ingresses of our class
// (HKS_BENCH_INGRESSES, default 5,000; each its own host, every path to
// Service web-a), the time from an API write to the first 200 through a
// real HAProxy for it: a new Ingress (to web-b), and an existing one
// moved to web-b (HKS_BENCH_CHANGES of each, default 40), one after the
// other; p50/p99 of each and the reloads they took (the goal: p50 <= 20
// ms, p99 <= 100 ms, 0 reloads), and each change's stages (stages:
// write, watch, queue, pass, probe). The Ingress twin of
// BenchmarkHTTPRoutePropagation; HKS_BENCH_CPUPROFILE=FILE profiles the
// process (the controller runs in it) during the changes, and
// HKS_BENCH_MEMPROFILE=PREFIX writes its allocations before and after
// them (allocProfile).
//
//	HKS_TESTBIN_DIR=... go test -run '^$' -bench BenchmarkIngressPropagation -benchtime 1x ./test/e2e/
func BenchmarkIngressPropagation(b *testing.B) {
	if !inNetns(b, podAddrs...) {
		return
	}
	n, changes := benchEnvInt("HKS_BENCH_INGRESSES", 5000), benchEnvInt("HKS_BENCH_CHANGES", 40)
	kube, client, _ := benchGatewayAPI(b)
	ctx := context.Background()
	ing := client.NetworkingV1()
	createIngressClass(b, ing)
	benchHTTPPod(b, client, "web-a", podAddrs[0], 8080)
	benchHTTPPod(b, client, "web-b", podAddrs[1], 8080)
	port := haproxytest.FreePort(b)
	t0 := time.Now()
	parallel(b, n, func(i int) error {
		name := "i" + strconv.Itoa(i)
		_, err := ing.Ingresses(ns).Create(ctx, ingressOf(name, name+".example.com", nil, prefix("/", "web-a")), metav1.CreateOptions{})
		return err
	})
	// web-b has an Ingress of its own from the start: its backend is
	// there, so an Ingress to it needs no new backend (a reload).
	if _, err := ing.Ingresses(ns).Create(ctx, ingressOf("seed-b", "seed-b.example.com", nil, prefix("/", "web-b")), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	created := time.Since(t0)
	// At debug every pass logs its "update" line: the passes are counted.
	// In JSON for its times at full precision (the stages).
	hap, log := benchControllerHAProxy(b, kube, "--mode=gateway", "--log-level", "debug", "--log-format", "json",
		"--ingress-class=hks", fmt.Sprintf("--ingress-http-port=%d", port))
	passes := func() int { return strings.Count(log.String(), `"msg":"update"`) }
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	t0 = time.Now()
	if _, err := untilHTTP(c, port, fmt.Sprintf("i%d.example.com", n-1), "web-a", t0, 10*time.Minute); err != nil {
		b.Fatal(err)
	}
	synced := time.Since(t0)
	reloads := benchReloads(b, hap)
	passes0 := idlePasses(passes, time.Second, time.Minute)
	before := reloads()
	var added, moved []time.Duration
	var addedAt, movedAt []change
	events := watchEvents(b, func(ctx context.Context) (watch.Interface, error) {
		return ing.Ingresses(ns).Watch(ctx, metav1.ListOptions{})
	})
	stopProfile := cpuProfile(b) // the changes only
	stopAllocs := allocProfile(b)
	for i := range changes {
		name := fmt.Sprintf("new%d", i)
		start := time.Now()
		if _, err := ing.Ingresses(ns).Create(ctx, ingressOf(name, name+".example.com", nil, prefix("/", "web-b")), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		written := time.Now()
		d, err := untilHTTP(c, port, name+".example.com", "web-b", start, time.Minute)
		if err != nil {
			b.Fatalf("new Ingress %d: %v", i, err)
		}
		added = append(added, d)
		seen, _ := events.first(name, start, 10*time.Second)
		addedAt = append(addedAt, change{start: start, written: written, seen: seen, served: start.Add(d)})
	}
	addReloads := reloads() - before
	before = reloads()
	for i := range changes {
		name := fmt.Sprintf("i%d", i*(n/changes))
		var start, written time.Time
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			x, err := ing.Ingresses(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			x.Spec.Rules[0].HTTP.Paths[0].Backend.Service = &netv1.IngressServiceBackend{Name: "web-b", Port: netv1.ServiceBackendPort{Number: 80}}
			start = time.Now()
			_, err = ing.Ingresses(ns).Update(ctx, x, metav1.UpdateOptions{})
			written = time.Now()
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		d, err := untilHTTP(c, port, name+".example.com", "web-b", start, time.Minute)
		if err != nil {
			b.Fatalf("Ingress %s moved: %v", name, err)
		}
		moved = append(moved, d)
		seen, _ := events.first(name, start, 10*time.Second)
		movedAt = append(movedAt, change{start: start, written: written, seen: seen, served: start.Add(d)})
	}
	stopProfile()
	stopAllocs()
	moveReloads := reloads() - before
	perChange := float64(idlePasses(passes, time.Second, time.Minute)-passes0) / float64(2*changes)
	propagation{kind: "Ingresses", n: n, created: created, synced: synced, added: added, moved: moved,
		addReloads: addReloads, moveReloads: moveReloads, perChange: perChange}.report(b, log)
	ps := runtimePasses(log.String())
	reportStages(b, "new", stages(addedAt, ps))
	reportStages(b, "moved", stages(movedAt, ps))
	pp := passParts(log.String())
	reportPassParts(b, "new", addedAt, pp)
	reportPassParts(b, "moved", movedAt, pp)
}

// propagation is what a propagation benchmark measured: N objects of a
// kind created and served, the times from the API write to the first
// answer for new objects and for objects moved to another Service, the
// reloads each took and the passes per change.
type propagation struct {
	kind                    string
	n                       int
	created, synced         time.Duration
	added, moved            []time.Duration
	addReloads, moveReloads int
	perChange               float64
}

// report writes p as b's metrics and one log line (and the controller's
// log with HKS_BENCH_LOG).
func (p propagation) report(b *testing.B, log *haproxytest.LockedBuffer) {
	b.Helper()
	if os.Getenv("HKS_BENCH_LOG") != "" {
		b.Logf("controller log:\n%s", log.String())
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(pct(p.added, 0.5)), "new-p50-ms")
	b.ReportMetric(ms(pct(p.added, 0.99)), "new-p99-ms")
	b.ReportMetric(ms(pct(p.moved, 0.5)), "moved-p50-ms")
	b.ReportMetric(ms(pct(p.moved, 0.99)), "moved-p99-ms")
	b.ReportMetric(float64(p.addReloads+p.moveReloads), "reloads")
	b.ReportMetric(p.perChange, "passes/change")
	b.Logf("%d %s (created in %s, served %s after the controller started); new, %d: p50 %s p99 %s, %d reloads; moved to another Service, %d: p50 %s p99 %s, %d reloads; %.2f passes per change",
		p.n, p.kind, p.created.Round(time.Millisecond), p.synced.Round(time.Millisecond), len(p.added), pct(p.added, 0.5), pct(p.added, 0.99), p.addReloads,
		len(p.moved), pct(p.moved, 0.5), pct(p.moved, 0.99), p.moveReloads, p.perChange)
}
