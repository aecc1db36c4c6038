package claims

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

var now = time.Unix(10_000, 0)

func svc(name string) Parent { return Parent{Service, "ns", name, types.UID("uid-" + name)} }
func gw(name string) Parent  { return Parent{Gateway, "ns", name, types.UID("uid-" + name)} }

func want(a string, p Parent) Want { return Want{Addr: netip.MustParseAddr(a), Parent: p} }

func claim(a string, p Parent, age time.Duration) Claim {
	return Claim{Addr: netip.MustParseAddr(a), Parent: p, UID: types.UID("ip-" + a), Created: now.Add(-age)}
}

// summary: "+addr key" creations, "-addr key" deletions, "?addr key"
// verifications.
func summary(p Plan) string {
	var out []string
	for _, c := range p.Create {
		out = append(out, "+"+c.Addr.String()+" "+c.Parent.Key())
	}
	for _, c := range p.Delete {
		out = append(out, "-"+c.Addr.String()+" "+c.Parent.Key())
	}
	for _, c := range p.Verify {
		out = append(out, "?"+c.Addr.String()+" "+c.Parent.Key())
	}
	return strings.Join(out, " ")
}

func TestPlanFor(t *testing.T) {
	// The caches: Services a, b, c (c of another loadBalancerClass, not
	// this controller's); Gateway g; Service "old" was deleted
	// and created again (another UID); the Services mode does not watch
	// Gateways in "unwatched".
	exists := func(p Parent) Existence {
		switch {
		case p.Kind == Gateway && p.Namespace == "unwatched":
			return Unknown
		case p == svc("a"), p == svc("b"), p == svc("c"), p == gw("g"):
			return Exists
		}
		return Gone
	}
	recreated := Parent{Service, "ns", "a", "uid-before"}
	for _, tc := range []struct {
		name string
		own  Kind // the controller's: it answers for a, b and g, those of its kind
		want []Want
		have []Claim
		plan string
	}{
		{"a new address is claimed", Service, []Want{want("198.18.0.1", svc("a"))}, nil, "+198.18.0.1 ns/a"},
		{"claimed already: nothing", Service, []Want{want("198.18.0.1", svc("a"))}, []Claim{claim("198.18.0.1", svc("a"), 0)}, ""},
		{"claimed by the other controller's object: left alone (the next allocation moves ours)", Service,
			[]Want{want("198.18.0.1", svc("a"))}, []Claim{claim("198.18.0.1", gw("g"), 0)}, ""},
		{"shared: one claim, for the first by key", Service,
			[]Want{want("198.18.0.1", svc("b")), want("198.18.0.1", svc("a"))}, nil, "+198.18.0.1 ns/a"},
		{"the object asks for another address: released, the new one claimed", Service,
			[]Want{want("198.18.0.2", svc("a"))}, []Claim{claim("198.18.0.1", svc("a"), 0)}, "+198.18.0.2 ns/a -198.18.0.1 ns/a"},
		{"an object never seen: verified (it may be newer than the cache)", Service, nil,
			[]Claim{claim("198.18.0.1", svc("gone"), 0)}, "?198.18.0.1 ns/gone"},
		{"an object seen and now gone (deleted): released at once", Service, nil,
			[]Claim{claim("198.18.0.1", svc("deleted"), 0)}, "-198.18.0.1 ns/deleted"},
		{"the other kind's object seen and deleted: released at once by either", Service, nil,
			[]Claim{claim("198.18.0.1", gw("deleted"), 0)}, "-198.18.0.1 Gateway ns/deleted"},
		{"created again under its name: the old claim is another object's", Service, []Want{want("198.18.0.1", svc("a"))},
			[]Claim{claim("198.18.0.1", recreated, 0)}, "?198.18.0.1 ns/a"},
		{"the other kind's object exists: its claim is its controller's", Service, nil,
			[]Claim{claim("198.18.0.1", gw("g"), time.Hour)}, ""},
		{"the other kind's object gone (never seen): verified by either controller", Service, nil,
			[]Claim{claim("198.18.0.1", gw("gone"), 0)}, "?198.18.0.1 Gateway ns/gone"},
		{"a kind not watched: never judged", Service, nil,
			[]Claim{claim("198.18.0.1", Parent{Gateway, "unwatched", "g", "u"}, time.Hour)}, ""},
		{"another controller's Service (another loadBalancerClass) keeps its claim", Service, nil,
			[]Claim{claim("198.18.0.1", svc("c"), 0)}, ""},
		{"the gateway mode releases its Gateway's, not a Service's", Gateway, nil,
			[]Claim{claim("198.18.0.1", gw("g"), 0), claim("198.18.0.2", svc("a"), 0)}, "-198.18.0.1 Gateway ns/g"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[types.UID]bool{svc("deleted").UID: true, gw("deleted").UID: true}
			mine := map[types.UID]bool{}
			for _, p := range []Parent{svc("a"), svc("b"), gw("g")} {
				if p.Kind == tc.own {
					mine[p.UID] = true
				}
			}
			if got := summary(PlanFor(tc.want, mine, tc.have, exists, seen)); got != tc.plan {
				t.Errorf("got  %q\nwant %q", got, tc.plan)
			}
		})
	}
}

func TestIPAddressRoundTrip(t *testing.T) {
	cs := []Claim{
		{Addr: netip.MustParseAddr("198.18.0.1"), Parent: svc("a")},
		{Addr: netip.MustParseAddr("2001:db8::1"), Parent: gw("g"), ShareKey: "k"},
		{Addr: netip.MustParseAddr("198.18.0.2"), Parent: Parent{Kind: IngressClass, Name: "hks", UID: "u-hks"}},
	}
	for _, c := range cs {
		ip := c.IPAddress()
		if err := validName(ip); err != nil {
			t.Error(err)
		}
		got, ok := Read(ip)
		if !ok || !reflect.DeepEqual(got, c) {
			t.Errorf("read back %+v (%v), want %+v", got, ok, c)
		}
	}
	other := (&Claim{Addr: netip.MustParseAddr("10.96.0.1"), Parent: svc("kubernetes")}).IPAddress()
	other.Labels[networkingv1.LabelManagedBy] = "ipallocator.k8s.io"
	if _, ok := Read(other); ok {
		t.Errorf("a ClusterIP's IPAddress read as ours")
	}
	if ref := cs[2].IPAddress().Spec.ParentRef; ref.Group != "networking.k8s.io" || ref.Resource != "ingressclasses" || ref.Namespace != "" {
		t.Errorf("an IngressClass's claim names %+v", ref)
	}
	if got := ReadAll([]*networkingv1.IPAddress{cs[0].IPAddress(), other, cs[1].IPAddress(), cs[2].IPAddress()}); !reflect.DeepEqual(got, cs) {
		t.Errorf("ReadAll = %+v, want %+v (ours, in order)", got, cs)
	}
}

// validName: the apiserver wants the address in canonical form.
func validName(ip *networkingv1.IPAddress) error {
	a, err := netip.ParseAddr(ip.Name)
	if err != nil || a.String() != ip.Name {
		return fmt.Errorf("name %q not canonical", ip.Name)
	}
	return nil
}

func TestToPools(t *testing.T) {
	got := ToPools([]Claim{claim("198.18.0.1", gw("g"), 0), {Addr: netip.MustParseAddr("198.18.0.2"), Parent: svc("a"), ShareKey: "k"},
		{Addr: netip.MustParseAddr("198.18.0.3"), Parent: Parent{Kind: IngressClass, Name: "hks"}}})
	want := pools.Claims{netip.MustParseAddr("198.18.0.1"): {Key: "Gateway ns/g"}, netip.MustParseAddr("198.18.0.2"): {Key: "ns/a", ShareKey: "k"},
		netip.MustParseAddr("198.18.0.3"): {Key: "IngressClass hks"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
