package controller

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
)

// TestRefusalEvents: a router's refusal is a Warning Event on each
// Service with a published address, none on the others.
func TestRefusalEvents(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.10")
	web, db := lbService("web"), lbService("db")
	const msg = "router 192.0.2.1 refused the BGP session of 192.0.2.5 (notification received: bad peer AS)"
	for _, tc := range []struct {
		name  string
		opts  PublisherOptions
		addrs map[string][]netip.Addr
		want  int
	}{
		{"pooled: the Services given an address", PublisherOptions{Pooled: true}, map[string][]netip.Addr{"ns/web": {a}}, 1},
		{"static: every Service served", PublisherOptions{Addresses: []netip.Addr{a}}, nil, 2},
		{"nothing published", PublisherOptions{Pooled: true}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPublisher(nil, staticLister{web, db}, tc.opts)
			p.Served([]*corev1.Service{web, db}, tc.addrs)
			rec := record.NewFakeRecorder(10)
			RefusalEvents(p, rec)(msg)
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			if len(got) != tc.want || slices.ContainsFunc(got, func(e string) bool { return e != "Warning AnnounceRefused "+msg }) {
				t.Fatalf("events %s, want %d of %q", strings.Join(got, "; "), tc.want, msg)
			}
		})
	}
	RefusalEvents(nil, nil)(msg) // nothing published, no recorder: nothing
}

// TestServedKeepsPartlyServed: a Service the driver left out waits for its
// status; one it serves in part (Refusal.Served: some servers cut, issue
// 29's ServedByFewerServers) keeps it, with its Warning all the same.
func TestServedKeepsPartlyServed(t *testing.T) {
	svc := func(name string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	all := []*corev1.Service{svc("a"), svc("b"), svc("c")}
	for _, tc := range []struct {
		name    string
		refused []driver.Refusal
		want    []string
	}{
		{"none", nil, []string{"a", "b", "c"}},
		{"left out", []driver.Refusal{{Service: "ns/b", Reason: "PortTaken"}}, []string{"a", "c"}},
		{"served in part", []driver.Refusal{{Service: "ns/b", Reason: "ServedByFewerServers", Served: true}}, []string{"a", "b", "c"}},
		{"both", []driver.Refusal{{Service: "ns/a", Reason: "ServedByFewerServers", Served: true}, {Service: "ns/c", Reason: "WaitingForSpare"}}, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range served(all, tc.refused) {
				got = append(got, s.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("served %v, want %v", got, tc.want)
			}
		})
	}
}
