package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A shape burst is issue 29's burst taken apart on the apiserver's side:
// HKS_BENCH_BURST new objects of one shape written at once (the burst's
// writers, HKS_BENCH_BURST_WRITERS' first), nothing probed, each write
// timed, with the apiserver's own accounts around it (apiserverLoad).
// HKS_BENCH_BURST_SHAPES lists the shapes written before any controller
// starts (the controller not running); HKS_BENCH_BURST_SHAPES_CTL the
// ones written in each run after its bursts (the controller serving the
// world, no prober running).

// burstShape is one shape: what each of its Services and EndpointSlices is.
type burstShape struct {
	name, what string
	// service is Service k's object (nil: the shape writes none); n is
	// the index of k within the shapes' bursts of this kind (the
	// explicit ClusterIPs').
	service func(w *newSvcWorld, k, n int) *corev1.Service
	slice   bool // the Service's EndpointSlice after it
}

// staticIP is the n-th address of the world's service range
// (172.20.0.0/16, svcScaleWorld) in the part the apiserver keeps for
// explicit ClusterIPs (its first 256, KEP-3070): no dynamic one is there
// while the rest has room.
func staticIP(n int) string {
	return netip.AddrFrom4([4]byte{172, 20, byte((n + 1) >> 8), byte(n + 1)}).String()
}

// burstShapes are the shapes a burst can take, by name.
var burstShapes = []burstShape{
	{name: "full", what: "the burst's pair: a LoadBalancer Service (Local, nodePort and healthCheckNodePort given), then its EndpointSlice",
		service: func(w *newSvcWorld, k, _ int) *corev1.Service { return w.service(k) }, slice: true},
	{name: "svc", what: "the burst's Service alone",
		service: func(w *newSvcWorld, k, _ int) *corev1.Service { return w.service(k) }},
	{name: "slice", what: "the burst's EndpointSlice alone (no Service)", slice: true},
	{name: "noports", what: "the pair without node ports: allocateLoadBalancerNodePorts false, externalTrafficPolicy Cluster",
		service: func(w *newSvcWorld, k, _ int) *corev1.Service {
			s := w.service(k)
			off := false
			s.Spec.AllocateLoadBalancerNodePorts = &off
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
			s.Spec.HealthCheckNodePort = 0
			s.Spec.Ports[0].NodePort = 0
			return s
		}, slice: true},
	{name: "clusterip", what: "the pair with the Service's clusterIP given (from the range's static part)",
		service: func(w *newSvcWorld, k, n int) *corev1.Service {
			s := w.service(k)
			s.Spec.ClusterIP = staticIP(n)
			return s
		}, slice: true},
	{name: "headless", what: "the pair with a headless ClusterIP Service (no ClusterIP, no node port)",
		service: func(w *newSvcWorld, k, _ int) *corev1.Service {
			s := w.service(k)
			s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: corev1.ClusterIPNone, Selector: s.Spec.Selector,
				Ports: []corev1.ServicePort{{Name: "tcp", Port: s.Spec.Ports[0].Port, Protocol: corev1.ProtocolTCP}}}
			return s
		}, slice: true},
}

// parseBurstShapes reads a comma-separated list of shape names.
func parseBurstShapes(v string) ([]burstShape, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []burstShape
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		i := indexShape(name)
		if i < 0 {
			return nil, fmt.Errorf("%q is not a burst shape (one of %s)", name, shapeNames())
		}
		out = append(out, burstShapes[i])
	}
	return out, nil
}

func indexShape(name string) int {
	for i, s := range burstShapes {
		if s.name == name {
			return i
		}
	}
	return -1
}

func shapeNames() string {
	var ns []string
	for _, s := range burstShapes {
		ns = append(ns, s.name)
	}
	return strings.Join(ns, ", ")
}

func envShapes(b *testing.B, name string) []burstShape {
	s, err := parseBurstShapes(os.Getenv(name))
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return s
}

// shapeWrites is what one shape burst's writes took.
type shapeWrites struct {
	writes     time.Duration   // from the first write until the last returned
	svc, slice []time.Duration // each create call
	failed     int
}

// writeShape writes one burst of shape s (w.burst new objects, writers
// at a time: writeBurst) and times each call.
func (w *newSvcWorld) writeShape(s burstShape, writers int) shapeWrites {
	first := w.next
	w.next += w.burst
	n0 := w.static
	if s.name == "clusterip" {
		w.static += w.burst
	}
	var mu sync.Mutex
	var out shapeWrites
	ctx := context.Background()
	start := time.Now()
	var last time.Time
	errs := writeBurst(w.burst, writers, func(i int) (time.Time, error) {
		k := first + i
		if s.service != nil {
			svc := s.service(w, k, n0+i)
			t := time.Now()
			if _, err := w.client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
				return time.Time{}, fmt.Errorf("Service %s: %w", svc.Name, err)
			}
			mu.Lock()
			out.svc = append(out.svc, time.Since(t))
			mu.Unlock()
		}
		if s.slice {
			t := time.Now()
			if _, err := w.client.DiscoveryV1().EndpointSlices(ns).Create(ctx, w.slice(k), metav1.CreateOptions{}); err != nil {
				return time.Time{}, fmt.Errorf("EndpointSlice %d: %w", k, err)
			}
			mu.Lock()
			out.slice = append(out.slice, time.Since(t))
			mu.Unlock()
		}
		return time.Now(), nil
	}, func(_ int, at time.Time) {
		mu.Lock()
		last = later(last, at)
		mu.Unlock()
	})
	for _, err := range errs {
		if err != nil {
			out.failed++
		}
	}
	out.writes = last.Sub(start)
	return out
}

// shapeBursts writes a burst of each shape in turn (phase names them in
// the log and the metrics: "bare" with no controller, else the run's
// mode), each with the apiserver's accounts around it, 2 s apart.
// ctlPID is the controller's process (0: none).
func (w *newSvcWorld) shapeBursts(b *testing.B, phase string, shapes []burstShape, ctlPID int) {
	writers := w.writers[0]
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	line := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "-"
		}
		return fmt.Sprintf("p50 %.1f / p99 %.1f / max %.1f ms", ms(pct(ds, 0.5)), ms(pct(ds, 0.99)), ms(maxDur(ds)))
	}
	for k, s := range shapes {
		if k > 0 {
			time.Sleep(2 * time.Second) // not a synchronisation: the last burst's watchers and status writes settle
		}
		services := w.services + w.next // the world's and every new one so far (slice-only bursts included)
		load := w.startLoad(b, fmt.Sprintf("%s-%s-%d", phase, s.name, k), ctlPID)
		r := w.writeShape(s, writers)
		acc := load.stop(b)
		b.Logf("%s: shape burst %s (%s) at %d Services, %s: all %d written in %.1f ms (%d failed); load %s",
			phase, s.name, s.what, services, writersLabel(writers, w.burst), w.burst, ms(r.writes), r.failed, loadAvg())
		b.Logf("%s: shape burst %s: each Service create %s; each EndpointSlice create %s", phase, s.name, line(r.svc), line(r.slice))
		b.Logf("%s: shape burst %s: %s", phase, s.name, acc)
		b.ReportMetric(ms(r.writes), fmt.Sprintf("%s-shape-%s-ms", phase, s.name))
	}
}
