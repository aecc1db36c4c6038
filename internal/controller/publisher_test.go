package controller

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

type staticLister []*corev1.Service

func (l staticLister) Service(ns, name string) (*corev1.Service, bool) {
	for _, s := range l {
		if s.Namespace == ns && s.Name == name {
			return s, true
		}
	}
	return nil, false
}
func (l staticLister) Services() []*corev1.Service { return l }

func lbService(name string, ingress ...corev1.LoadBalancerIngress) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: "7"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
		Status:     corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: ingress}},
	}
}

// Which Services get a status write: served ones that lack exactly our
// ingress (ipMode Proxy), and unserved ones that carry exactly ours; never
// another load balancer's status.
func TestPublisherWritesOnlyWhatDiffers(t *testing.T) {
	proxy, vip := corev1.LoadBalancerIPModeProxy, corev1.LoadBalancerIPModeVIP
	ours := corev1.LoadBalancerIngress{IP: "192.0.2.1", IPMode: &proxy}
	cases := []struct {
		name   string
		svc    *corev1.Service
		served bool
		want   string // the patched ingress, "" for no write
	}{
		{"served, no status", lbService("a"), true, `[{"ip":"192.0.2.1","ipMode":"Proxy"}]`},
		{"served, already ours", lbService("b", ours), true, ""},
		{"served, VIP mode", lbService("c", corev1.LoadBalancerIngress{IP: "192.0.2.1", IPMode: &vip}), true, `[{"ip":"192.0.2.1","ipMode":"Proxy"}]`},
		{"served, no ipMode", lbService("d", corev1.LoadBalancerIngress{IP: "192.0.2.1"}), true, `[{"ip":"192.0.2.1","ipMode":"Proxy"}]`},
		{"no longer served, ours", lbService("e", ours), false, `[]`},
		{"not served, foreign", lbService("f", corev1.LoadBalancerIngress{IP: "198.51.100.1"}), false, ""},
		{"not served, nothing", lbService("g"), false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(tc.svc)
			var (
				mu      sync.Mutex
				patches []string
			)
			snapshot := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(patches) }
			client.PrependReactor("patch", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
				p := a.(k8stesting.PatchAction)
				if p.GetSubresource() == "status" {
					mu.Lock()
					patches = append(patches, string(p.GetPatch()))
					mu.Unlock()
				}
				return true, tc.svc, nil
			})
			p := NewPublisher(client, staticLister{tc.svc}, PublisherOptions{Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.1")}, Workers: 1})
			var served []*corev1.Service
			if tc.served {
				served = append(served, tc.svc)
			}
			p.Served(served, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			go p.Run(ctx)
			wantN := 0
			if tc.want != "" {
				wantN = 1
			}
			deadline := time.Now().Add(time.Second)
			for time.Now().Before(deadline) && len(snapshot()) < wantN {
				time.Sleep(5 * time.Millisecond) // poll interval
			}
			cancel()
			got := snapshot()
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("wrote %v, want no write", got)
				}
				return
			}
			wantBody := `{"metadata":{"resourceVersion":"7"},"status":{"loadBalancer":{"ingress":` + tc.want + `}}}`
			if len(got) == 0 || got[0] != wantBody {
				t.Fatalf("patches %v, want %s", got, wantBody)
			}
		})
	}
}

// Served with the same list costs no work: nothing is queued again.
func TestPublisherServedSameListIsCheap(t *testing.T) {
	p := NewPublisher(fake.NewClientset(), staticLister{}, PublisherOptions{Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.1")}})
	a, b := lbService("a"), lbService("b")
	p.Served([]*corev1.Service{a, b}, nil)
	<-p.wake
	p.Served([]*corev1.Service{a, b}, nil)
	select {
	case <-p.wake:
		t.Fatal("the same list woke the publisher")
	default:
	}
	p.Served([]*corev1.Service{a}, nil)
	select {
	case <-p.wake:
	default:
		t.Fatal("a changed list did not wake the publisher")
	}
	if !slices.Equal(p.last, []*corev1.Service{a}) {
		t.Fatalf("last = %v", p.last)
	}
	var nilPub *Publisher
	nilPub.Served([]*corev1.Service{a}, nil) // no addresses: a no-op
}

// With pools, each Service's status is its own addresses; a Service
// without any loses only a status of ours (ipMode Proxy).
func TestPublisherPooledDesiredStatus(t *testing.T) {
	proxy, vip := corev1.LoadBalancerIPModeProxy, corev1.LoadBalancerIPModeVIP
	p := NewPublisher(fake.NewClientset(), staticLister{}, PublisherOptions{Pooled: true})
	if p == nil {
		t.Fatal("no Publisher with pools and no --publish-address")
	}
	p.Served(nil, map[string][]netip.Addr{"ns/a": {netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("2001:db8::1")}})
	p.Owned(func(a netip.Addr) bool { return netip.MustParsePrefix("198.18.0.0/24").Contains(a) })
	for _, tc := range []struct {
		svc   *corev1.Service
		want  []string
		write bool
	}{
		{lbService("a"), []string{"198.18.0.1", "2001:db8::1"}, true},
		{lbService("a", corev1.LoadBalancerIngress{IP: "198.18.0.1", IPMode: &proxy}, corev1.LoadBalancerIngress{IP: "2001:db8::1", IPMode: &proxy}), []string{"198.18.0.1", "2001:db8::1"}, false},
		{lbService("b", corev1.LoadBalancerIngress{IP: "198.18.0.2", IPMode: &proxy}), nil, true},
		{lbService("c", corev1.LoadBalancerIngress{IP: "198.18.0.3", IPMode: &vip}), nil, false},
		{lbService("d", corev1.LoadBalancerIngress{IP: "203.0.113.3", IPMode: &proxy}), nil, false}, // another load balancer's
	} {
		got, write := p.desiredStatus(tc.svc, false)
		var ips []string
		for _, g := range got {
			ips = append(ips, g.IP)
		}
		if !slices.Equal(ips, tc.want) || write != tc.write {
			t.Errorf("%s: %v, write %v; want %v, %v", tc.svc.Name, ips, write, tc.want, tc.write)
		}
	}
}
