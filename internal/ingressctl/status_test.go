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
