package controller

import (
	"net/netip"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// What the Claimer is told: every address given to a selected
// LoadBalancer Service (used and pending alike), and the Services whose
// claims it answers for: the selected ones and those that are no
// LoadBalancer (nobody's), not another class's.
func TestGivenToClaimer(t *testing.T) {
	svc := func(name string, typ corev1.ServiceType) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}, Spec: corev1.ServiceSpec{Type: typ}}
	}
	a, b, other, cip := svc("a", corev1.ServiceTypeLoadBalancer), svc("b", corev1.ServiceTypeLoadBalancer), svc("other", corev1.ServiceTypeLoadBalancer), svc("cip", corev1.ServiceTypeClusterIP)
	x, y := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.2")
	res := pools.Result{Assigned: map[string][]netip.Addr{"ns/a": {x}}, Pending: map[string][]netip.Addr{"ns/b": {y}}}
	got, wants, mine := given(res, []*corev1.Service{a, b, other, cip}, func(s *corev1.Service) bool { return s != other })
	if want := map[string][]netip.Addr{"ns/a": {x}, "ns/b": {y}}; !reflect.DeepEqual(got, want) {
		t.Errorf("given %v, want %v", got, want)
	}
	if len(wants) != 2 || wants[0].Addr != x || wants[0].Parent.UID != "uid-a" || wants[1].Addr != y || wants[1].Parent.UID != "uid-b" {
		t.Errorf("wants %+v", wants)
	}
	if want := map[types.UID]bool{"uid-a": true, "uid-b": true, "uid-cip": true}; !reflect.DeepEqual(mine, want) {
		t.Errorf("mine %v, want %v", mine, want)
	}
}
