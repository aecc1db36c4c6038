package controller

import (
	"log/slog"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

// TestAnnouncedReadsTheCachedService: the writer reads Services from the
// informers' cache, where they are kept through source.Slim. A Service
// whose Announced condition is already the one to write needs no write
// (the generation and our condition survive Slim; when they did not,
// every look, every 5 s, patched every Service with a new transition
// time); one whose generation moved on, or whose holders changed, does.
func TestAnnouncedReadsTheCachedService(t *testing.T) {
	vip := netip.MustParseAddr("192.0.2.10")
	holders := announce.Holders{vip: {"lb1"}}
	a := &Announced{pub: NewPublisher(nil, nil, PublisherOptions{Addresses: []netip.Addr{vip}}), scope: ScopeGroup, log: slog.New(slog.DiscardHandler)}
	written := AnnouncedCondition([]netip.Addr{vip}, holders, 4, ScopeGroup)
	written.LastTransitionTime = metav1.NewTime(time.Unix(1700000000, 0))
	other := metav1.Condition{Type: "example.com/Other", Status: metav1.ConditionTrue, Reason: "Theirs"}
	for _, tc := range []struct {
		name       string
		generation int64
		holders    announce.Holders
		needed     bool
	}{
		{"as written", 4, holders, false},
		{"spec changed since", 5, holders, true},
		{"holder moved", 4, announce.Holders{vip: {"lb2"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Generation: tc.generation},
				Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080}}},
				Status:     corev1.ServiceStatus{Conditions: []metav1.Condition{other, written}},
			}
			kept, err := source.Slim(svc)
			if err != nil {
				t.Fatal(err)
			}
			want, needed := a.desired(kept.(*corev1.Service), tc.holders)
			if needed != tc.needed {
				t.Fatalf("write needed: %v, want %v (%+v)", needed, tc.needed, want)
			}
			if want.Status == written.Status && !want.LastTransitionTime.Equal(&written.LastTransitionTime) {
				t.Fatalf("transition time %v, want the written %v kept", want.LastTransitionTime, written.LastTransitionTime)
			}
		})
	}
}
