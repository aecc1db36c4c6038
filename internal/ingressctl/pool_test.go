package ingressctl

import (
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/claims"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// classCache is a cache holding IngressClass hks (naming pool, if any)
// and one Ingress of it.
type classCache struct {
	class *netv1.IngressClass
	ing   *netv1.Ingress
}

func newClassCache(pool string) *classCache {
	c := &netv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "hks", UID: "u-hks", Annotations: map[string]string{}},
		Spec: netv1.IngressClassSpec{Controller: ingress.ControllerName}}
	if pool != "" {
		c.Annotations[pools.PoolAnnotation] = pool
	}
	name := "hks"
	pt := netv1.PathTypePrefix
	ing := &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "shop"}, Spec: netv1.IngressSpec{IngressClassName: &name,
		Rules: []netv1.IngressRule{{Host: "shop.example.com", IngressRuleValue: netv1.IngressRuleValue{HTTP: &netv1.HTTPIngressRuleValue{
			Paths: []netv1.HTTPIngressPath{{Path: "/", PathType: &pt, Backend: netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: "web", Port: netv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
	return &classCache{class: c, ing: ing}
}

func (c *classCache) Ingresses() ([]*netv1.IngressClass, []*netv1.Ingress) {
	return []*netv1.IngressClass{c.class}, []*netv1.Ingress{c.ing}
}

func (c *classCache) IngressObject(namespace, name string) (*netv1.Ingress, bool) {
	return c.ing, namespace == "a" && name == "shop"
}

func (c *classCache) IngressConfigMaps() map[ingress.Key]*corev1.ConfigMap { return nil }

// TestClassAddressFromPool: an IngressClass naming a pool asks for one
// address on the Ingresses' ports; given one (claimed), every frontend
// binds it transparent and the Ingress's status lists it, and it is
// wanted as the class's claim; given none (a problem, being claimed,
// no claims made), nothing is served and a problem is a Warning on the
// class; without --address-pools the annotation is a Warning and the
// Ingresses are served on the flags' addresses.
func TestClassAddressFromPool(t *testing.T) {
	own := netip.MustParseAddr("198.18.0.7")
	bind := []netip.Addr{netip.MustParseAddr("192.0.2.10")}
	key := pools.IngressClassKey("hks")
	for _, tc := range []struct {
		name     string
		pool     string
		families string // the ip-families annotation ("": none)
		pooled   bool
		claims   pools.Claims
		given    gateway.Given
		binds    string // the frontends' binds; "": no frontend
		status   string
		event    string // a Warning's reason and text
		wants    int
	}{
		{name: "given, claimed", pool: "p", pooled: true, claims: pools.Claims{}, given: gateway.Given{Addrs: []netip.Addr{own}},
			binds: "198.18.0.7:80 transparent", status: "198.18.0.7", wants: 1},
		{name: "being claimed", pool: "p", pooled: true, claims: pools.Claims{}, given: gateway.Given{Pending: []netip.Addr{own}}, wants: 1},
		{name: "exhausted", pool: "p", pooled: true, claims: pools.Claims{},
			given: gateway.Given{Problems: []pools.Problem{{Key: key, Reason: pools.ReasonExhausted, Message: "no free IPv4 address in AddressPool(s) p; the Service waits"}}},
			event: "AddressNotAssigned no free IPv4 address in AddressPool(s) p; the IngressClass waits"},
		{name: "no claims made", pool: "p", pooled: true, event: "AddressNotAssigned an address of AddressPool p needs the address claims"},
		{name: "ip-families unreadable", pool: "p", families: "IPv5", pooled: true, claims: pools.Claims{}, given: gateway.Given{Addrs: []netip.Addr{own}},
			event: `AddressNotAssigned annotation haproxy-k8s-sync.io/ip-families: invalid value "IPv5": want IPv4, IPv6 or both, comma-separated; the class's Ingresses are not served`},
		{name: "no pool named", pooled: true, claims: pools.Claims{}, binds: "192.0.2.10:80", status: "192.0.2.10"},
		{name: "pools off", pool: "p", binds: "192.0.2.10:80", status: "192.0.2.10", event: "AddressPoolsOff the address-pool annotation needs run --address-pools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClassCache(tc.pool)
			if tc.families != "" {
				c.class.Annotations[pools.IngressClassFamiliesAnnotation] = tc.families
			}
			rec := record.NewFakeRecorder(10)
			s := newServer(c, Options{Ingress: ingress.Options{Class: "hks", Addresses: bind}, Pooled: tc.pooled, Recorder: rec,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			var wants []claims.Want
			if tc.pooled {
				reqs := s.PoolRequests(gateway.Input{}, tc.claims)
				asks := tc.pool != "" && tc.claims != nil && tc.families == ""
				if (len(reqs) == 1) != asks || (asks && (reqs[0].Key != key || reqs[0].Pool != tc.pool ||
					!slices.Equal(reqs[0].Ports, []pools.Port{{Protocol: "TCP", Port: 80}, {Protocol: "TCP", Port: 443}}))) {
					t.Fatalf("requests %+v", reqs)
				}
				var mine map[string]bool
				w, m := s.PoolGiven(map[string]gateway.Given{key: tc.given})
				wants, mine = w, map[string]bool{}
				for u := range m {
					mine[string(u)] = true
				}
				if !mine["u-hks"] {
					t.Errorf("the class is not among the objects answered for: %v", m)
				}
			}
			if len(wants) != tc.wants || (tc.wants == 1 && (wants[0].Addr != own || wants[0].Parent != claims.Parent{Kind: claims.IngressClass, Name: "hks", UID: "u-hks"})) {
				t.Errorf("wants %+v", wants)
			}
			var cfg model.Config
			s.Add(&cfg, gateway.Input{})
			var binds []string
			for _, f := range cfg.Frontends {
				for _, b := range f.Binds {
					if b.Port == 80 {
						x := b.Addr.String() + ":80"
						if b.Transparent {
							x += " transparent"
						}
						binds = append(binds, x)
					}
				}
			}
			if got := strings.Join(binds, ","); got != tc.binds {
				t.Errorf("binds %q, want %q", got, tc.binds)
			}
			s.Applied()
			var status []string
			if want, _ := s.want(c.ing, s.ours()); want != nil {
				for _, l := range want {
					status = append(status, l.IP)
				}
			}
			if got := strings.Join(status, ","); got != tc.status {
				t.Errorf("status %q, want %q", got, tc.status)
			}
			var ev string // the class's, the Ingress's BackendNotFound aside
			for len(rec.Events) > 0 {
				if e := <-rec.Events; strings.HasPrefix(e, "Warning Address") {
					ev = e
				}
			}
			if (tc.event == "") != (ev == "") || !strings.Contains(ev, tc.event) {
				t.Errorf("event %q, want one with %q", ev, tc.event)
			}
		})
	}
}
