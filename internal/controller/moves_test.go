package controller

import (
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
)

// TestMoveEvents: a move is an AddressMoved Event on each Service the
// address is published for (pooled: the Services given it; static:
// every LoadBalancer Service served), and on no other.
func TestMoveEvents(t *testing.T) {
	a, b := netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("192.0.2.11")
	web, db := lbService("web"), lbService("db")
	for _, tc := range []struct {
		name   string
		opts   PublisherOptions
		addrs  map[string][]netip.Addr
		moved  netip.Addr
		events []string // Services named
	}{
		{"pooled: the Service given it", PublisherOptions{Pooled: true}, map[string][]netip.Addr{"ns/web": {a}, "ns/db": {b}}, a, []string{"web"}},
		{"pooled: nobody's", PublisherOptions{Pooled: true}, map[string][]netip.Addr{"ns/web": {a}}, b, nil},
		{"static: every Service served", PublisherOptions{Addresses: []netip.Addr{a}}, nil, a, []string{"db", "web"}},
		{"static: not published", PublisherOptions{Addresses: []netip.Addr{a}}, nil, b, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPublisher(nil, staticLister{web, db}, tc.opts)
			p.Served([]*corev1.Service{web, db}, tc.addrs)
			rec := record.NewFakeRecorder(10)
			MoveEvents(p, rec)(announce.Move{Addr: tc.moved, From: []string{"lb1"}, To: []string{"lb3"}, Why: announce.WhySilent})
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				want := "Normal AddressMoved " + tc.moved.String() + " moved from lb1 to lb3: lb1 silent"
				if e != want {
					t.Fatalf("event %q, want %q", e, want)
				}
				got = append(got, e)
			}
			var named []string
			for _, s := range p.ServicesWith(tc.moved) {
				named = append(named, s.Name)
			}
			slices.Sort(named)
			if len(got) != len(tc.events) || !slices.Equal(named, tc.events) {
				t.Fatalf("%d events on %v, want on %v", len(got), named, tc.events)
			}
		})
	}
	MoveEvents(nil, nil)(announce.Move{Addr: a}) // nothing published, no recorder: nothing
}
