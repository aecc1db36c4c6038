package ingressctl

import (
	"net/netip"
	"testing"

	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// TestWant: a served Ingress's status lists the addresses of the model
// that runs, no more; one we no longer serve loses only what we wrote.
func TestWant(t *testing.T) {
	lb := []netip.Addr{netip.MustParseAddr("192.0.2.10")}
	ours := []netv1.IngressLoadBalancerIngress{{IP: "192.0.2.10"}}
	theirs := []netv1.IngressLoadBalancerIngress{{IP: "198.51.100.7"}}
	for _, tc := range []struct {
		name    string
		served  bool
		have    []netv1.IngressLoadBalancerIngress
		want    []netv1.IngressLoadBalancerIngress
		differs bool
	}{
		{"served, empty", true, nil, ours, true},
		{"served, written", true, ours, ours, false},
		{"served, another's", true, theirs, ours, true},
		{"not served, ours", false, ours, nil, true},
		{"not served, another's", false, theirs, nil, false},
		{"not served, empty", false, nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(nil, Options{Ingress: ingress.Options{Addresses: lb}})
			if tc.served {
				s.pending = ingress.Result{Served: map[ingress.Key][]netip.Addr{{Namespace: "a", Name: "b"}: lb}}
			}
			s.Applied()
			ing := &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "b"}}
			ing.Status.LoadBalancer.Ingress = tc.have
			got, differs := s.want(ing, s.ours())
			if differs != tc.differs || len(got) != len(tc.want) || (len(got) == 1 && got[0].IP != tc.want[0].IP) {
				t.Errorf("want %v %v, got %v %v", tc.want, tc.differs, got, differs)
			}
		})
	}
}

// TestAppliedWakesOnChange: the status writers are woken when what the
// served Ingresses' status should say changed, and only then.
func TestAppliedWakesOnChange(t *testing.T) {
	a, b := []netip.Addr{netip.MustParseAddr("192.0.2.10")}, []netip.Addr{netip.MustParseAddr("192.0.2.11")}
	k1, k2 := ingress.Key{Namespace: "a", Name: "1"}, ingress.Key{Namespace: "a", Name: "2"}
	s := New(nil, Options{})
	for i, step := range []struct {
		served map[ingress.Key][]netip.Addr
		wake   bool
	}{
		{map[ingress.Key][]netip.Addr{}, true}, // the first: nothing written yet
		{map[ingress.Key][]netip.Addr{}, false},
		{map[ingress.Key][]netip.Addr{k1: a}, true},
		{map[ingress.Key][]netip.Addr{k1: a}, false},
		{map[ingress.Key][]netip.Addr{k1: a, k2: a}, true},
		{map[ingress.Key][]netip.Addr{k1: a, k2: b}, true},
		{map[ingress.Key][]netip.Addr{k1: a, k2: b}, false},
		{map[ingress.Key][]netip.Addr{k2: b}, true},
	} {
		s.pending = ingress.Result{Served: step.served}
		s.Applied()
		woke := false
		select {
		case <-s.wake:
			woke = true
		default:
		}
		if woke != step.wake {
			t.Fatalf("step %d: woken %v, want %v", i, woke, step.wake)
		}
	}
}
