package main

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

const ns = "default"

// extraNodes are nodes that do not exist at the start: one endpoint of
// each of the last Services runs on one of them, so creating such a Node
// adds a server and deleting it removes one.
const extraNodes = 4

// world is the cluster the bench builds and the bench's own model of what
// HAProxy must then run. Service i is svc-NNNNN with port feBase+i and
// nodePort npBase+i; its endpoint j runs on node (i+j)%N.
type world struct {
	c              kubernetes.Interface
	subnet         int
	S, E, N        int
	feBase, npBase int

	mu       sync.Mutex
	slices   map[int]*discoveryv1.EndpointSlice // last written slice per Service
	notReady map[[2]int]bool                    // {service, endpoint} not ready
	excluded map[int]bool                       // node index → excluded
	extraOn  map[int]bool                       // extra node index → exists
	total    int                                // Services that exist (S + burst)
}

func newWorld(c kubernetes.Interface, cfg config) *world {
	return &world{c: c, subnet: cfg.subnet, S: cfg.services, E: cfg.endpoints, N: cfg.nodes, feBase: cfg.feBase, npBase: cfg.npBase,
		slices: map[int]*discoveryv1.EndpointSlice{}, notReady: map[[2]int]bool{}, excluded: map[int]bool{}, extraOn: map[int]bool{}}
}

func svcName(i int) string { return fmt.Sprintf("svc-%05d", i) }

func (w *world) backend(i int) string {
	return fmt.Sprintf("be_%s_%s_%d", ns, svcName(i), w.feBase+i)
}

func nodeName(n int) string  { return fmt.Sprintf("node-%03d", n) }
func extraName(m int) string { return fmt.Sprintf("extra-%d", m) }

func (w *world) nodeIP(n int) string  { return fmt.Sprintf("127.%d.0.%d", w.subnet, n+1) }
func (w *world) extraIP(m int) string { return fmt.Sprintf("127.%d.1.%d", w.subnet, m+1) }

// extraOf is the extra node whose endpoint Service i has, or -1.
func (w *world) extraOf(i int) int {
	if m := w.S - 1 - i; m >= 0 && m < extraNodes {
		return m
	}
	return -1
}

func podIP(i, j int) string {
	k := i*16 + j + 1
	return fmt.Sprintf("10.%d.%d.%d", (k>>16)&255, (k>>8)&255, k&255)
}

// sliceOf builds Service i's EndpointSlice from the model.
func (w *world) sliceOf(i int) *discoveryv1.EndpointSlice {
	var eps []lab.Endpoint
	for j := range w.E {
		eps = append(eps, lab.Endpoint{IP: podIP(i, j), Node: nodeName((i + j) % w.N), Ready: !w.notReady[[2]int{i, j}]})
	}
	if m := w.extraOf(i); m >= 0 {
		eps = append(eps, lab.Endpoint{IP: podIP(i, 15), Node: extraName(m), Ready: true})
	}
	return lab.SliceFor(ns, svcName(i), 8080, eps)
}

// expectedRange is what expected says for Services from to to-1, by backend.
func (w *world) expectedRange(from, to int) map[string]map[netip.AddrPort]bool {
	want := make(map[string]map[netip.AddrPort]bool, to-from)
	for i := from; i < to; i++ {
		want[w.backend(i)] = w.expected(i)
	}
	return want
}

// expected is the set of servers (addr:port, not in maintenance) Service
// i's backend must have.
func (w *world) expected(i int) map[netip.AddrPort]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	port := uint16(w.npBase + i)
	out := make(map[netip.AddrPort]bool, w.E+1)
	for j := range w.E {
		n := (i + j) % w.N
		if !w.notReady[[2]int{i, j}] && !w.excluded[n] {
			out[netip.AddrPortFrom(netip.MustParseAddr(w.nodeIP(n)), port)] = true
		}
	}
	if m := w.extraOf(i); m >= 0 && w.extraOn[m] {
		out[netip.AddrPortFrom(netip.MustParseAddr(w.extraIP(m)), port)] = true
	}
	return out
}

// parallel runs f(i) for i in [from, to) on workers goroutines and returns
// the first error.
func parallel(from, to, workers int, f func(i int) error) error {
	var mu sync.Mutex
	var first error
	next := from
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil
				mu.Unlock()
				if i >= to || stop {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// createNodes creates the N Nodes.
func (w *world) createNodes(ctx context.Context) error {
	return parallel(0, w.N, 8, func(n int) error {
		return lab.CreateNode(ctx, w.c, nodeName(n), w.nodeIP(n), true)
	})
}

// service is what lab.CreateService would create, with the
// healthCheckNodePort of the Local policy set too: auto-allocated, it would
// take the explicit nodePorts of Services created later.
func (w *world) service(i int) *corev1.Service {
	class := desired.DefaultClass
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svcName(i)},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass:     &class,
			Selector:              map[string]string{"app": svcName(i)},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			HealthCheckNodePort:   int32(w.npBase + w.S + burstSize + 100 + i),
			Ports: []corev1.ServicePort{{Name: "tcp", Port: int32(w.feBase + i), NodePort: int32(w.npBase + i),
				Protocol: corev1.ProtocolTCP}},
		},
	}
}

// createServices creates Services [from, to) with their slices.
func (w *world) createServices(ctx context.Context, from, to int) error {
	err := parallel(from, to, 24, func(i int) error {
		if _, err := w.c.CoreV1().Services(ns).Create(ctx, w.service(i), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("service %d: %w", i, err)
		}
		w.mu.Lock()
		sl := w.sliceOf(i)
		w.mu.Unlock()
		got, err := w.c.DiscoveryV1().EndpointSlices(ns).Create(ctx, sl, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("slice %d: %w", i, err)
		}
		w.mu.Lock()
		w.slices[i] = got
		w.mu.Unlock()
		return nil
	})
	w.mu.Lock()
	w.total = max(w.total, to)
	w.mu.Unlock()
	return err
}

// deleteServices removes Services [from, to) and their slices.
func (w *world) deleteServices(ctx context.Context, from, to int) error {
	err := parallel(from, to, 24, func(i int) error {
		err := w.c.CoreV1().Services(ns).Delete(ctx, svcName(i), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		err = w.c.DiscoveryV1().EndpointSlices(ns).Delete(ctx, svcName(i)+"-lab", metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		w.mu.Lock()
		delete(w.slices, i)
		w.mu.Unlock()
		return nil
	})
	w.mu.Lock()
	w.total = min(w.total, from)
	w.mu.Unlock()
	return err
}

// setReady writes Service i's slice with endpoint j (not) ready: one API write.
func (w *world) setReady(ctx context.Context, i, j int, ready bool) error {
	w.mu.Lock()
	if ready {
		delete(w.notReady, [2]int{i, j})
	} else {
		w.notReady[[2]int{i, j}] = true
	}
	sl := w.sliceOf(i)
	sl.ResourceVersion = w.slices[i].ResourceVersion
	w.mu.Unlock()
	got, err := w.c.DiscoveryV1().EndpointSlices(ns).Update(ctx, sl, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.slices[i] = got
	w.mu.Unlock()
	return nil
}

// setExcluded labels node n (or removes the label).
func (w *world) setExcluded(ctx context.Context, n int, excluded bool) error {
	w.mu.Lock()
	w.excluded[n] = excluded
	w.mu.Unlock()
	return lab.SetNodeExcluded(ctx, w.c, nodeName(n), excluded)
}

// setExtra creates or deletes extra node m.
func (w *world) setExtra(ctx context.Context, m int, on bool) error {
	w.mu.Lock()
	w.extraOn[m] = on
	w.mu.Unlock()
	if on {
		return lab.CreateNode(ctx, w.c, extraName(m), w.extraIP(m), true)
	}
	return w.c.CoreV1().Nodes().Delete(ctx, extraName(m), metav1.DeleteOptions{})
}

// restore undoes every change still in effect, so the next mode starts
// from the same cluster.
func (w *world) restore(ctx context.Context) error {
	w.mu.Lock()
	var eps [][2]int
	for k := range w.notReady {
		eps = append(eps, k)
	}
	var nodes, extras []int
	for n, ex := range w.excluded {
		if ex {
			nodes = append(nodes, n)
		}
	}
	for m, on := range w.extraOn {
		if on {
			extras = append(extras, m)
		}
	}
	w.mu.Unlock()
	for _, k := range eps {
		if err := w.setReady(ctx, k[0], k[1], true); err != nil {
			return err
		}
	}
	for _, n := range nodes {
		if err := w.setExcluded(ctx, n, false); err != nil {
			return err
		}
	}
	for _, m := range extras {
		if err := w.setExtra(ctx, m, false); err != nil {
			return err
		}
	}
	return nil
}

// waitGone waits until extra nodes deleted by restore are gone from the API.
func (w *world) settle(ctx context.Context) {
	for m := range extraNodes {
		for range 100 {
			if _, err := w.c.CoreV1().Nodes().Get(ctx, extraName(m), metav1.GetOptions{}); apierrors.IsNotFound(err) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
