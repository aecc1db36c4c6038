package source

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/liveheap"
)

// keptService is the i-th Service of issue 29's benchmark as the
// apiserver sends it (its defaults, the status our controller wrote,
// kubectl's field manager) in protobuf, the informers' wire format.
func keptService(t testing.TB, i int) []byte {
	class, family, mode := "haproxy-k8s-sync.io/lb", corev1.IPFamilyPolicySingleStack, corev1.LoadBalancerIPModeVIP
	alloc := true
	itp := corev1.ServiceInternalTrafficPolicyCluster
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%05d", i), Namespace: "bench", UID: "0e9d5c53-60c2-4d6e-8f16-3c1b2a7d9e40",
			ResourceVersion: fmt.Sprint(100000 + i), CreationTimestamp: metav1.Now(),
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "e2e.test", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1"}}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class, Selector: map[string]string{"app": fmt.Sprintf("svc-%05d", i)},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal, HealthCheckNodePort: int32(40000 + i),
			Ports: []corev1.ServicePort{{Name: "tcp", Port: int32(20000 + i), NodePort: int32(30000 + i), Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromInt32(int32(20000 + i))}},
			ClusterIP: fmt.Sprintf("10.96.%d.%d", i>>8&255, i&255), ClusterIPs: []string{fmt.Sprintf("10.96.%d.%d", i>>8&255, i&255)},
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: &family, SessionAffinity: corev1.ServiceAffinityNone,
			AllocateLoadBalancerNodePorts: &alloc, InternalTrafficPolicy: &itp},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "203.0.113.10", IPMode: &mode}}}},
	}
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serviceCacheKept is the heap n Services keep once decoded and through
// the informers' transform, per Service.
func serviceCacheKept(t testing.TB, n int) float64 {
	raw := make([][]byte, n)
	for i := range raw {
		raw[i] = keptService(t, i)
	}
	kept := make([]any, n)
	grew := liveheap.Growth(func() {
		for i := range kept {
			s := &corev1.Service{}
			if err := s.Unmarshal(raw[i]); err != nil {
				t.Fatal(err)
			}
			o, err := Slim(s)
			if err != nil {
				t.Fatal(err)
			}
			kept[i] = o
		}
	})
	runtime.KeepAlive(kept)
	return float64(grew) / float64(n)
}

// BenchmarkServiceCacheKept: the bytes a Service keeps in the informers'
// cache (issue 29's peak: 10,000 of them), decoded from protobuf and
// slimmed (kept-B/op: per Service).
//
//	go test ./internal/source -run '^$' -bench ServiceCacheKept -benchtime 3x
func BenchmarkServiceCacheKept(b *testing.B) {
	var sum float64
	for b.Loop() {
		sum += serviceCacheKept(b, 10000)
	}
	b.ReportMetric(sum/float64(b.N), "kept-B/op")
}

// TestSlimSharesServiceStrings: two Services decoded on their own share,
// once slimmed, the bytes of the strings Services repeat, and each is
// still the Service it was (field for field, what Slim keeps).
func TestSlimSharesServiceStrings(t *testing.T) {
	var got [2]*corev1.Service
	for i := range got {
		s := &corev1.Service{}
		if err := s.Unmarshal(keptService(t, i)); err != nil {
			t.Fatal(err)
		}
		want := s.DeepCopy()
		o, err := Slim(s)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = o.(*corev1.Service)
		if !apiequality.Semantic.DeepEqual(got[i].Spec.Ports, want.Spec.Ports) || got[i].Namespace != want.Namespace ||
			*got[i].Spec.LoadBalancerClass != *want.Spec.LoadBalancerClass || *got[i].Spec.IPFamilyPolicy != *want.Spec.IPFamilyPolicy ||
			got[i].Spec.Type != want.Spec.Type || *got[i].Status.LoadBalancer.Ingress[0].IPMode != *want.Status.LoadBalancer.Ingress[0].IPMode {
			t.Fatalf("Service %d changed: %+v, want %+v", i, got[i], want)
		}
	}
	a, b := got[0], got[1]
	for _, c := range []struct {
		what string
		x, y string
	}{
		{"namespace", a.Namespace, b.Namespace},
		{"type", string(a.Spec.Type), string(b.Spec.Type)},
		{"externalTrafficPolicy", string(a.Spec.ExternalTrafficPolicy), string(b.Spec.ExternalTrafficPolicy)},
		{"sessionAffinity", string(a.Spec.SessionAffinity), string(b.Spec.SessionAffinity)},
		{"loadBalancerClass", *a.Spec.LoadBalancerClass, *b.Spec.LoadBalancerClass},
		{"ipFamilyPolicy", string(*a.Spec.IPFamilyPolicy), string(*b.Spec.IPFamilyPolicy)},
		{"ipFamilies", string(a.Spec.IPFamilies[0]), string(b.Spec.IPFamilies[0])},
		{"port name", a.Spec.Ports[0].Name, b.Spec.Ports[0].Name},
		{"port protocol", string(a.Spec.Ports[0].Protocol), string(b.Spec.Ports[0].Protocol)},
		{"ipMode", string(*a.Status.LoadBalancer.Ingress[0].IPMode), string(*b.Status.LoadBalancer.Ingress[0].IPMode)},
	} {
		if unsafe.StringData(c.x) != unsafe.StringData(c.y) {
			t.Errorf("the two Services' %s (%q) are two copies, not one shared", c.what, c.x)
		}
	}
	if a.Spec.LoadBalancerClass == b.Spec.LoadBalancerClass {
		t.Error("the two Services share a pointer: each keeps its own")
	}
}

// BenchmarkSlimService: the transform of one Service (the list of
// 10,000 at a start pays it 10,000 times).
//
//	go test ./internal/source -run '^$' -bench SlimService -count 6
func BenchmarkSlimService(b *testing.B) {
	svcs := make([]*corev1.Service, 1000)
	for i := range svcs {
		svcs[i] = &corev1.Service{}
		if err := svcs[i].Unmarshal(keptService(b, i)); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		if _, err := Slim(svcs[i%len(svcs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
