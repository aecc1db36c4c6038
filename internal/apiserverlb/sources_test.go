package apiserverlb

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func aps(s ...string) []netip.AddrPort {
	var out []netip.AddrPort
	for _, x := range s {
		out = append(out, netip.MustParseAddrPort(x))
	}
	return out
}

func TestParseSources(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		bad  bool
	}{
		{in: DefaultSources, want: []string{"endpointslice", "nodes", "static"}},
		{in: " configmap , static ", want: []string{"configmap", "static"}},
		{in: "static", want: []string{"static"}},
		{in: "", bad: true},
		{in: ",", bad: true},
		{in: "endpoints", bad: true},
		{in: "static,static", bad: true},
	} {
		got, err := ParseSources(c.in)
		if (err != nil) != c.bad || !slices.Equal(got, c.want) {
			t.Errorf("ParseSources(%q) = %v, %v; want %v (error: %v)", c.in, got, err, c.want, c.bad)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseSources(%q): error %v is not ErrInvalid", c.in, err)
		}
	}
}

func TestParseServers(t *testing.T) {
	for _, c := range []struct {
		name, in string
		zeroPort bool // the default port is 0, not 6443
		want     []netip.AddrPort
		err      string // part of the message; "" for none
	}{
		{name: "host:port and host", in: "192.0.2.2:8443\n192.0.2.1\n", want: aps("192.0.2.1:6443", "192.0.2.2:8443")},
		{name: "comments, blanks, commas, duplicates", in: "# masters\n\n 192.0.2.1:6443 , 192.0.2.1\n192.0.2.3\n", want: aps("192.0.2.1:6443", "192.0.2.3:6443")},
		{name: "IPv6 with and without port", in: "[2001:db8::1]:443\n2001:db8::2", want: aps("[2001:db8::1]:443", "[2001:db8::2]:6443")},
		{name: "IPv4-mapped IPv6 unmapped", in: "[::ffff:192.0.2.9]:6443", want: aps("192.0.2.9:6443")},
		{name: "empty", in: "\n# nothing\n", want: nil},
		{name: "host name refused", in: "master-1.example:6443", err: `line 1: invalid server "master-1.example:6443"`},
		{name: "one bad line spoils the list", in: "192.0.2.1\n192.0.2.300\n", err: "line 2"},
		{name: "port 0", in: "192.0.2.1:0", err: "port 0"},
		{name: "port too large", in: "192.0.2.1:65536", err: `invalid server "192.0.2.1:65536": port "65536", want 1-65535`},
		{name: "port far too large", in: "[2001:db8::1]:99999", err: `port "99999", want 1-65535`},
		{name: "port negative", in: "192.0.2.1:-1", err: `port "-1", want 1-65535`},
		{name: "port not a number", in: "192.0.2.1:https", err: `port "https", want 1-65535`},
		{name: "default port 0", in: "192.0.2.1", zeroPort: true, err: "no port, and the default port is 0"},
		{name: "default port 0, port given", in: "192.0.2.1:6443", zeroPort: true, want: aps("192.0.2.1:6443")},
		{name: "unspecified", in: "0.0.0.0:6443", err: "not a unicast"},
		{name: "multicast", in: "224.0.0.1", err: "not a unicast"},
		{name: "zone", in: "[fe80::1%eth0]:6443", err: "invalid server"},
		{name: "injection", in: "192.0.2.1:6443 check\n\tserver evil 198.51.100.1:80", err: "invalid server"},
		{name: "injection after address", in: "192.0.2.1 backup", err: "invalid server"},
	} {
		t.Run(c.name, func(t *testing.T) {
			port := uint16(6443)
			if c.zeroPort {
				port = 0
			}
			got, err := ParseServers(c.in, port)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("got %v, %v; want an ErrInvalid containing %q", got, err, c.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, c.want) {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func slice(port int32, portName string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ref(portName), Port: ref(port)}},
		Endpoints:   eps,
	}
}

func ep(ready *bool, addrs ...string) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: addrs, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
}

func TestFromEndpointSlices(t *testing.T) {
	twoPorts := slice(6443, "other", ep(nil, "192.0.2.9"))
	twoPorts.Ports = append(twoPorts.Ports, discoveryv1.EndpointPort{Name: ref("more"), Port: ref(int32(7443))})
	named := slice(6443, "https", ep(nil, "192.0.2.8"))
	named.Ports = append(named.Ports, discoveryv1.EndpointPort{Name: ref("more"), Port: ref(int32(7443))})
	for _, c := range []struct {
		name string
		in   []*discoveryv1.EndpointSlice
		want []netip.AddrPort
	}{
		{"none", nil, nil},
		{"apiserver leases", []*discoveryv1.EndpointSlice{slice(6443, "https", ep(nil, "192.0.2.2"), ep(ref(true), "192.0.2.1"))}, aps("192.0.2.1:6443", "192.0.2.2:6443")},
		{"not ready left out", []*discoveryv1.EndpointSlice{slice(6443, "https", ep(ref(false), "192.0.2.2"), ep(nil, "192.0.2.1"))}, aps("192.0.2.1:6443")},
		{"no endpoints", []*discoveryv1.EndpointSlice{slice(6443, "https")}, nil},
		{"port named https among several", []*discoveryv1.EndpointSlice{named}, aps("192.0.2.8:6443")},
		{"several ports, none https: skipped", []*discoveryv1.EndpointSlice{twoPorts}, nil},
		{"bad address skipped", []*discoveryv1.EndpointSlice{slice(6443, "https", ep(nil, "not-an-ip", "192.0.2.1"))}, aps("192.0.2.1:6443")},
	} {
		if got := FromEndpointSlices(c.in); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func node(name string, controlPlane bool, addrs ...corev1.NodeAddress) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	if controlPlane {
		n.Labels[ControlPlaneLabel] = ""
	}
	n.Status.Addresses = addrs
	return n
}

func TestFromNodes(t *testing.T) {
	internal := func(a string) corev1.NodeAddress { return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a} }
	external := corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "198.51.100.1"}
	got := FromNodes([]*corev1.Node{
		node("cp-2", true, external, internal("192.0.2.2")),
		node("cp-1", true, internal("192.0.2.1"), internal("192.0.2.11")), // the first InternalIP
		node("worker", false, internal("192.0.2.50")),
		node("cp-noaddr", true, external),
	}, 8443)
	if want := aps("192.0.2.1:8443", "192.0.2.2:8443"); !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestFromConfigMap(t *testing.T) {
	cm := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "lb"}, Data: data}
	}
	for _, c := range []struct {
		name string
		in   *corev1.ConfigMap
		want []netip.AddrPort
		bad  bool
	}{
		{"missing ConfigMap", nil, nil, false},
		{"missing key", cm(map[string]string{"other": "192.0.2.1"}), nil, false},
		{"servers", cm(map[string]string{"servers": "192.0.2.1\n192.0.2.2:7443\n"}), aps("192.0.2.1:6443", "192.0.2.2:7443"), false},
		{"invalid", cm(map[string]string{"servers": "192.0.2.1\nmaster-2\n"}), nil, true},
	} {
		got, err := FromConfigMap(c.in, 6443)
		if (err != nil) != c.bad || !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, %v; want %v (error: %v)", c.name, got, err, c.want, c.bad)
		}
		if err != nil && !strings.Contains(err.Error(), "kube-system/lb") {
			t.Errorf("%s: error %q does not name the ConfigMap", c.name, err)
		}
	}
}

func TestChoose(t *testing.T) {
	es, nodes, cm, static := aps("192.0.2.1:6443", "192.0.2.2:6443"), aps("192.0.2.11:6443"), aps("192.0.2.21:6443"), aps("192.0.2.31:6443")
	last := Choice{Source: SourceEndpointSlice, Servers: aps("192.0.2.99:6443")}
	all := []string{SourceEndpointSlice, SourceNodes, SourceConfigMap, SourceStatic}
	bad := errors.New("line 2: invalid")
	for _, c := range []struct {
		name     string
		order    []string
		found    map[string]Found
		want     Choice
		kept     bool
		whyMatch string
	}{
		{"first source wins", all, map[string]Found{SourceEndpointSlice: {Servers: es}, SourceNodes: {Servers: nodes}, SourceStatic: {Servers: static}},
			Choice{SourceEndpointSlice, es}, false, ""},
		{"empty falls through to nodes", all, map[string]Found{SourceEndpointSlice: {}, SourceNodes: {Servers: nodes}, SourceStatic: {Servers: static}},
			Choice{SourceNodes, nodes}, false, ""},
		{"then configmap", all, map[string]Found{SourceConfigMap: {Servers: cm}, SourceStatic: {Servers: static}},
			Choice{SourceConfigMap, cm}, false, ""},
		{"then static", all, map[string]Found{SourceStatic: {Servers: static}}, Choice{SourceStatic, static}, false, ""},
		{"order is the user's", []string{SourceStatic, SourceEndpointSlice}, map[string]Found{SourceEndpointSlice: {Servers: es}, SourceStatic: {Servers: static}},
			Choice{SourceStatic, static}, false, ""},
		{"sources not listed are ignored", []string{SourceNodes}, map[string]Found{SourceEndpointSlice: {Servers: es}},
			last, true, "every source is empty"},
		{"every source empty keeps the last list", all, map[string]Found{SourceEndpointSlice: {}, SourceNodes: {}},
			last, true, "every source is empty"},
		{"an invalid source keeps the last list", all, map[string]Found{SourceConfigMap: {Err: bad}, SourceStatic: {Servers: static}},
			last, true, "source configmap: line 2"},
		{"an invalid later source does not matter", all, map[string]Found{SourceNodes: {Servers: nodes}, SourceConfigMap: {Err: bad}},
			Choice{SourceNodes, nodes}, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := Choose(c.order, c.found, last)
			if !sameChoice(d.Choice, c.want) || d.Kept != c.kept {
				t.Fatalf("got %+v, want %+v kept=%v", d, c.want, c.kept)
			}
			if c.kept && (d.Why == nil || !strings.Contains(d.Why.Error(), c.whyMatch)) {
				t.Fatalf("why = %v, want %q", d.Why, c.whyMatch)
			}
		})
	}
	// Nothing applied yet and nothing found: still nothing (never an
	// empty list applied).
	if d := Choose(all, nil, Choice{}); len(d.Servers) != 0 || !d.Kept {
		t.Errorf("empty start: %+v", d)
	}
}

func ref[T any](v T) *T { return &v }
