package pools

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func TestGatewayRequests(t *testing.T) {
	web := Pool{Name: "web", Ranges: []Range{rg("198.18.0.10-198.18.0.12"), rg("2001:db8::/127")}, AutoAssign: true}
	exact := func(a ...string) func(*Request) {
		return func(r *Request) { r.IPs, r.Exact, r.Families = addrs(a...), true, []int{4} }
	}
	keep := func(r *Request) { r.KeepOnly = true }
	for _, tc := range []struct {
		name string
		reqs []Request
		want string
	}{
		{"several of one family", []Request{req("Gateway a/g", exact("198.18.0.10", "198.18.0.12"))},
			"Gateway a/g=198.18.0.10,198.18.0.12"},
		{"one taken by a reservation", []Request{req("a/svc", current("198.18.0.12"), keep), req("Gateway a/g", exact("198.18.0.10", "198.18.0.12"))},
			"Gateway a/g=198.18.0.10 a/svc=198.18.0.12 Gateway a/g:AddressTaken"},
		{"current ones kept, both of one family", []Request{req("a/x"), req("Gateway a/g", exact("198.18.0.10", "198.18.0.11"), current("198.18.0.10", "198.18.0.11"))},
			"Gateway a/g=198.18.0.10,198.18.0.11 a/x=198.18.0.12"},
		{"a reservation gets nothing new", []Request{req("Gateway a/g", keep), req("a/x")},
			"a/x=198.18.0.10"},
		{"outside every pool", []Request{req("Gateway a/g", exact("203.0.113.1"))},
			"Gateway a/g:AddressNotInPool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summary(Allocate([]Pool{web}, tc.reqs)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestGatewayRequest(t *testing.T) {
	ip, host := gwv1.IPAddressType, gwv1.HostnameAddressType
	g := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "g", CreationTimestamp: metav1.NewTime(time.Unix(100, 0)),
		Annotations: map[string]string{SharedIPAnnotation: "k"}},
		Spec: gwv1.GatewaySpec{
			Listeners: []gwv1.Listener{{Port: 53, Protocol: gwv1.UDPProtocolType}, {Port: 443, Protocol: gwv1.TLSProtocolType}, {Port: 443, Protocol: gwv1.TCPProtocolType}},
			Addresses: []gwv1.GatewaySpecAddress{{Type: &ip, Value: "198.18.0.10"}, {Value: "2001:db8::1"}, {Type: &host, Value: "lb.example.com"}, {Type: &ip}},
		},
		Status: gwv1.GatewayStatus{Addresses: []gwv1.GatewayStatusAddress{{Type: &ip, Value: "198.18.0.10"}, {Type: &host, Value: "x.example.com"}}},
	}
	r, bad := GatewayRequest(g, nil)
	if len(bad) > 0 || !r.Exact || r.Key != "Gateway a/g" || r.ShareKey != "k" || !r.Created.Equal(time.Unix(100, 0)) ||
		!slices.Equal(r.IPs, addrs("198.18.0.10", "2001:db8::1")) || !slices.Equal(r.Families, []int{4, 6}) ||
		!slices.Equal(r.Current, addrs("198.18.0.10")) || !slices.Equal(r.Ports, []Port{{"UDP", 53}, {"TCP", 443}}) {
		t.Errorf("request %+v, bad %v", r, bad)
	}
	g.Spec.Addresses = []gwv1.GatewaySpecAddress{{Value: "not-an-ip"}}
	if r, bad := GatewayRequest(g, nil); !slices.Equal(bad, []string{"not-an-ip"}) || !r.KeepOnly || r.Exact {
		t.Errorf("bad value: request %+v, bad %v", r, bad)
	}
	g.Spec.Addresses = nil
	if r, _ := GatewayRequest(g, nil); r.Exact || r.KeepOnly || len(r.Families) != 0 {
		t.Errorf("no spec.addresses: request %+v", r)
	}
}
