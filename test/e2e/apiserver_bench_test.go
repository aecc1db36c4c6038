package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// sliceWatch records when each address appeared in the default/kubernetes
// EndpointSlice (its apiserver's lease), watching through the load
// balancer.
type sliceWatch struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func watchKubernetesSlice(tb testing.TB, client kubernetes.Interface) *sliceWatch {
	w := &sliceWatch{seen: map[string]time.Time{}}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("default"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = discoveryv1.LabelServiceName + "=kubernetes" }))
	inf := f.Discovery().V1().EndpointSlices().Informer()
	update := func(obj any) {
		es, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		cur := map[string]bool{}
		for _, ep := range es.Endpoints {
			for _, a := range ep.Addresses {
				cur[a] = true
				if _, ok := w.seen[a]; !ok {
					w.seen[a] = now
				}
			}
		}
		for a := range w.seen {
			if !cur[a] {
				delete(w.seen, a)
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: update, UpdateFunc: func(_, o any) { update(o) }}); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	f.Start(ctx.Done())
	return w
}

func (w *sliceWatch) since(addr string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.seen[addr]
	return t, ok
}

// BenchmarkAPIServerFailover measures, in rounds over three real
// apiservers behind HAProxy driven by run --mode=apiserver: the time from
// killing an apiserver (SIGKILL) until HAProxy marks it down and sends it
// no new connection, the requests of two client loops that failed
// meanwhile, until the controller removes it (its lease expired), and,
// started again, the time from its lease appearing in the EndpointSlice
// to HAProxy serving it. Run with: make bench-apiserver (root: it creates
// a network namespace).
func BenchmarkAPIServerFailover(b *testing.B) {
	if !inNetns(b, append(slices.Clone(memberAddrs), lbAddr)...) {
		return
	}
	a := newAPILB(b)
	for _, m := range memberAddrs[:3] {
		a.member(m)
	}
	a.runController(a.apiControllerArgs(a.adminCreds(), "--bootstrap-servers", apiAddr(memberAddrs[0])))
	all := []string{apiAddr(memberAddrs[0]), apiAddr(memberAddrs[1]), apiAddr(memberAddrs[2])}
	a.within(converge+leaseMax, "three apiservers up", a.serving(true, all...))
	pooled, fresh := a.lbConfigs()
	lbClient, err := kubernetes.NewForConfig(pooled)
	if err != nil {
		b.Fatal(err)
	}
	slice := watchKubernetesSlice(b, lbClient)
	clients := map[string]*clientLoop{"client-go": startClientLoop(b, pooled), "new connection per request": startClientLoop(b, fresh)}
	reloads := a.reloads()

	const rounds = 3
	var down, removed, inBackend, up []time.Duration
	b.ResetTimer()
	for r := range rounds {
		victim := memberAddrs[r%3]
		rest := slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == apiAddr(victim) })
		a.cluster.Kill(victim)
		killed := time.Now()
		for {
			got, err := a.backend()
			if err == nil && !got[apiAddr(victim)] {
				break
			}
			if time.Since(killed) > converge {
				b.Fatalf("round %d: %s not marked down", r, victim)
			}
			time.Sleep(5 * time.Millisecond) // poll interval
		}
		down = append(down, time.Since(killed))
		a.within(leaseMax, "removed", a.serving(true, rest...))
		removed = append(removed, time.Since(killed))

		a.member(victim)
		var seen time.Time
		a.within(converge, "lease in the slice", func() error {
			var ok bool
			if seen, ok = slice.since(victim); !ok {
				return fmt.Errorf("%s not in the slice yet", victim)
			}
			return nil
		})
		a.within(converge, "in the backend", a.serving(false, all...))
		inBackend = append(inBackend, time.Since(seen))
		a.within(converge, "up", a.serving(true, all...))
		up = append(up, time.Since(seen))
	}
	b.StopTimer()
	failed := 0
	for n, c := range clients {
		c.end()
		failed += int(c.failed.Load())
		b.Logf("client %s: %d requests, %d failed, slowest %v", n, c.ok.Load()+c.failed.Load(), c.failed.Load(),
			time.Duration(c.slowest.Load()).Round(time.Millisecond))
	}
	if got := a.reloads(); got != reloads {
		b.Logf("HAProxy reloaded %d times during the rounds", got-reloads)
	}
	b.Logf("kill → marked down (no new connections): %v", roundAll(down))
	b.Logf("kill → removed by the controller (lease expired): %v", roundAll(removed))
	b.Logf("lease in the EndpointSlice → server in the backend: %v", roundAll(inBackend))
	b.Logf("lease in the EndpointSlice → server up (health checks): %v", roundAll(up))
	b.ReportMetric(float64(maxDur(down).Milliseconds()), "max-failover-ms")
	b.ReportMetric(float64(maxDur(inBackend).Milliseconds()), "max-join-ms")
	b.ReportMetric(float64(maxDur(up).Milliseconds()), "max-join-up-ms")
	b.ReportMetric(float64(failed), "failed-requests")
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func maxDur(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}
