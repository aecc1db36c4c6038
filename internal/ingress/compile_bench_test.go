package ingress

import (
	"fmt"
	"net/netip"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
)

// benchInput is n Ingresses of one host and two paths each, each on a
// Service of its own with two ready endpoints.
func benchInput(n int) Input {
	class := "haproxy"
	in := Input{Classes: []*netv1.IngressClass{{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: netv1.IngressClassSpec{Controller: ControllerName}}}}
	prefix := netv1.PathTypePrefix
	port, ready, pn := int32(8080), true, "http"
	t0 := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	for i := range n {
		name := fmt.Sprintf("app-%d", i)
		in.Services = append(in.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
		in.Slices = append(in.Slices, desired.SliceOf(&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: &pn, Port: &port}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{fmt.Sprintf("10.%d.%d.1", i/256, i%256)}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}},
				{Addresses: []string{fmt.Sprintf("10.%d.%d.2", i/256, i%256)}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}},
			}}))
		backend := netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: name, Port: netv1.ServiceBackendPort{Number: 80}}}
		in.Ingresses = append(in.Ingresses, &netv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(i) * time.Second)),
				Annotations: map[string]string{NginxPrefix + "upstream-vhost": "internal.example.com"}},
			Spec: netv1.IngressSpec{IngressClassName: &class, Rules: []netv1.IngressRule{{Host: name + ".example.com",
				IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{Paths: []netv1.HTTPIngressPath{
					{Path: "/", PathType: &prefix, Backend: backend}, {Path: "/api", PathType: &prefix, Backend: backend}}}}}}}})
	}
	return in
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCompile: one pass of the Ingress compiler (every Ingress,
// Merge into an empty model) at 500 and 5,000 Ingresses.
func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{500, 5000} {
		b.Run(fmt.Sprintf("ingresses=%d", n), func(b *testing.B) {
			in := benchInput(n)
			opts := Options{Class: "haproxy", Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.10")}, Last: &Memo{}}
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				res := Compile(in, opts)
				if len(res.Frontends) != 1 || len(res.Frontends[0].HTTP.Hosts) != n {
					b.Fatalf("%d frontends", len(res.Frontends))
				}
			}
			// On a shared machine the wall time waits for a core: the
			// process's CPU time per pass says what a pass costs.
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkCompileOneChange: a pass after one Ingress changed (a new
// version of it), the memos of the passes before kept: what a pass of
// run --mode=gateway --ingress-class costs per change at 5,000 Ingresses.
// memo=units forgets the last pass before each (a whole pass with the
// per-Ingress memo: ingmemo7's code), memo=none the compiled Ingresses
// too (main's code before it).
func BenchmarkCompileOneChange(b *testing.B) {
	for _, memo := range []string{"pass", "units", "none"} {
		b.Run("ingresses=5000/memo="+memo, func(b *testing.B) {
			in, opts := versionedWorld(5000)
			last := opts.Last
			Compile(in, opts)
			b.ReportAllocs()
			start := cpuTime()
			i := 0
			for b.Loop() {
				in.Ingresses[i%len(in.Ingresses)] = newVersion(in.Ingresses[i%len(in.Ingresses)], nil)
				i++
				if memo != "pass" {
					last.pass = nil
				}
				if memo == "none" {
					last.units = nil
				}
				if res := Compile(in, opts); len(res.Frontends) != 1 {
					b.Fatalf("%d frontends", len(res.Frontends))
				}
			}
			if want := b.N * btoi(memo == "pass"); last.patched != want {
				b.Fatalf("%d passes patched, want %d", last.patched, want)
			}
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// versionedWorld is benchInput(n) with every Ingress at resourceVersion
// 1 (newVersion counts on from it) and options with a memo of its own.
func versionedWorld(n int) (Input, Options) {
	in := benchInput(n)
	for i, ing := range in.Ingresses {
		c := ing.DeepCopy()
		c.ResourceVersion = "1"
		in.Ingresses[i] = c
	}
	return in, Options{Class: "haproxy", Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.10")}, Last: &Memo{}}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
