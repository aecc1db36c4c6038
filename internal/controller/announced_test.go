package controller

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

func TestAnnouncedCondition(t *testing.T) {
	a, b := netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10")
	const note = " (the leader's own BGP sessions; every healthy host announces on its own)"
	for _, tc := range []struct {
		name    string
		scope   Scope
		holders announce.Holders
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{"both held", ScopeGroup, announce.Holders{a: {"lb1"}, b: {"lb2"}}, metav1.ConditionTrue, ReasonAnnounced, "192.0.2.10 by lb1; 2001:db8::10 by lb2"},
		{"one by nobody", ScopeGroup, announce.Holders{a: {"lb1"}}, metav1.ConditionFalse, ReasonNotAnnounced, "192.0.2.10 by lb1; 2001:db8::10 by nobody"},
		{"two owners a moment", ScopeGroup, announce.Holders{a: {"lb1", "lb3"}, b: {"lb2"}}, metav1.ConditionTrue, ReasonAnnounced, "192.0.2.10 by lb1, lb3; 2001:db8::10 by lb2"},
		{"bgp: both advertised", ScopeLeader, announce.Holders{a: {"192.0.2.2"}, b: {"192.0.2.2"}}, metav1.ConditionTrue, ReasonAdvertised,
			"192.0.2.10 advertised by 192.0.2.2; 2001:db8::10 advertised by 192.0.2.2" + note},
		{"bgp: one not advertised (no session up for IPv6)", ScopeLeader, announce.Holders{a: {"192.0.2.2"}}, metav1.ConditionFalse, ReasonNotAdvertised,
			"192.0.2.10 advertised by 192.0.2.2; 2001:db8::10 not advertised to any router by the leader" + note},
		{"bgp: none (no session, or unhealthy)", ScopeLeader, nil, metav1.ConditionFalse, ReasonNotAdvertised,
			"192.0.2.10 not advertised to any router by the leader; 2001:db8::10 not advertised to any router by the leader" + note},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := AnnouncedCondition([]netip.Addr{a, b}, tc.holders, 3, tc.scope)
			if c.Type != ConditionAnnounced || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message || c.ObservedGeneration != 3 {
				t.Fatalf("%+v, want %s %s %q", c, tc.status, tc.reason, tc.message)
			}
		})
	}
}

// apiLister reads Services from the apiserver, each kept as the
// informers keep it (source.Slim).
type apiLister struct{ client kubernetes.Interface }

func (l apiLister) Service(ns, name string) (*corev1.Service, bool) {
	s, err := l.client.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, false
	}
	kept, err := source.Slim(s)
	if err != nil {
		return nil, false
	}
	return kept.(*corev1.Service), true
}

func (l apiLister) Services() []*corev1.Service { return nil }

// TestAnnouncedWritesTheCondition, against a real apiserver: the
// Service published for an address gets the Announced condition naming
// its holder, True; once nobody holds it (a poke), False and
// NotAnnounced; a condition of another type on the Service is kept
// throughout (a strategic merge by type).
func TestAnnouncedWritesTheCondition(t *testing.T) {
	if os.Getenv("HKS_TESTBIN_DIR") == "" {
		t.Skip("HKS_TESTBIN_DIR not set (hack/testbin.sh)")
	}
	client := kubeapi.Start(t).Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	vip := netip.MustParseAddr("192.0.2.10")
	svc, err := client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := metav1.Condition{Type: "example.com/Other", Status: metav1.ConditionTrue, Reason: "Theirs", LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second))}
	svc.Status.Conditions = []metav1.Condition{other}
	if svc, err = client.CoreV1().Services("default").UpdateStatus(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pub := NewPublisher(client, apiLister{client}, PublisherOptions{Addresses: []netip.Addr{vip}})
	pub.Served([]*corev1.Service{svc}, nil)
	var mu sync.Mutex
	holders := announce.Holders{vip: {"lb1"}}
	w := NewAnnounced(client, apiLister{client}, pub, func(context.Context) announce.Holders {
		mu.Lock()
		defer mu.Unlock()
		return holders
	}, ScopeGroup, slog.New(slog.DiscardHandler))
	go w.Run(ctx)
	expect := func(status metav1.ConditionStatus, reason, message string) {
		t.Helper()
		if err := netlab.Eventually(ctx, 10*time.Second, func() error {
			s, err := client.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			var got *metav1.Condition
			kept := false
			for i, c := range s.Status.Conditions {
				switch c.Type {
				case ConditionAnnounced:
					got = &s.Status.Conditions[i]
				case other.Type:
					kept = c.Reason == other.Reason
				}
			}
			if !kept || got == nil || got.Status != status || got.Reason != reason || got.Message != message || got.LastTransitionTime.IsZero() {
				return fmt.Errorf("conditions %+v, want %s %s %q and %s kept", s.Status.Conditions, status, reason, message, other.Type)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	expect(metav1.ConditionTrue, ReasonAnnounced, "192.0.2.10 by lb1")
	mu.Lock()
	holders = announce.Holders{}
	mu.Unlock()
	w.Poke()
	expect(metav1.ConditionFalse, ReasonNotAnnounced, "192.0.2.10 by nobody")
}
