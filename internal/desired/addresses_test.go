package desired

import (
	"net/netip"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

func port443(s *corev1.Service) {
	s.Spec.Ports = []corev1.ServicePort{{Name: "https", Port: 443, NodePort: 30443, Protocol: corev1.ProtocolTCP}}
}

func binds(r Result) map[string][]model.Bind {
	out := map[string][]model.Bind{}
	for _, f := range r.Config.Frontends {
		out[f.Name] = f.Binds
	}
	for _, u := range r.Config.UDP {
		out[u.Name] = u.Binds
	}
	return out
}

func TestPooledBinds(t *testing.T) {
	a := netip.MustParseAddr
	fb := func(addr string, port uint16) model.Bind {
		return model.Bind{Addr: a(addr), Port: port, Transparent: true}
	}
	o := defaults()
	o.Pooled, o.UDP = true, true
	in := Input{Nodes: nodes[:1], Services: []*corev1.Service{
		svc("default", "a", 0, port443),
		svc("default", "b", 1, port443),
		svc("default", "c", 2, port443),    // the same address as a: conflict
		svc("default", "d", 3),             // shares a's address on port 80
		svc("default", "e", 4, port443),    // no address: waits
		wireguard("default", "vpn", 5),     // UDP on its own address
		svc("default", "dual", 6, port443), // IPv4 and IPv6
		svc("default", "np", 7, func(s *corev1.Service) { // NodePort opted in: --bind-address
			s.Spec.Type, s.Spec.LoadBalancerClass = corev1.ServiceTypeNodePort, nil
			s.Annotations = map[string]string{settings.EnabledAnnotation: "true"}
			s.Spec.Ports[0].Port = 8080
		}),
	}, Addresses: map[string][]netip.Addr{
		"default/a": {a("198.18.0.1")}, "default/b": {a("198.18.0.2")}, "default/c": {a("198.18.0.1")},
		"default/d": {a("198.18.0.1")}, "default/vpn": {a("198.18.0.3")}, "default/dual": {a("198.18.0.4"), a("2001:db8::4")},
	}}
	want := map[string][]model.Bind{
		"fe_default_a_443":      {fb("198.18.0.1", 443)},
		"fe_default_b_443":      {fb("198.18.0.2", 443)},
		"fe_default_d_80":       {fb("198.18.0.1", 80)},
		"fe_default_dual_443":   {fb("198.18.0.4", 443), fb("2001:db8::4", 443)},
		"udp_default_vpn_51820": {{Addr: a("198.18.0.3"), Port: 51820}},
		"fe_default_np_8080":    {{Port: 8080}},
	}
	var memo Memo
	for pass := range 2 {
		in.Memo = &memo
		r := Compute(in, o)
		if got := binds(r); !reflect.DeepEqual(got, want) {
			t.Errorf("pass %d: binds %v\nwant %v", pass, got, want)
		}
		if got := reasons(r); !reflect.DeepEqual(got, []string{"c:PortConflict"}) {
			t.Errorf("pass %d: problems %v", pass, got)
		}
	}
	// New assignments (e gets one, b another): the memo follows.
	in.Addresses["default/e"] = []netip.Addr{a("198.18.0.5")}
	in.Addresses["default/b"] = []netip.Addr{a("198.18.0.6")}
	want["fe_default_e_443"] = []model.Bind{fb("198.18.0.5", 443)}
	want["fe_default_b_443"] = []model.Bind{fb("198.18.0.6", 443)}
	r := Compute(in, o)
	if got := binds(r); !reflect.DeepEqual(got, want) {
		t.Errorf("after new assignments: binds %v\nwant %v", got, want)
	}
	in.Memo = nil
	if got := binds(Compute(in, o)); !reflect.DeepEqual(got, want) {
		t.Errorf("without memo: binds %v", got)
	}
}

// A LoadBalancer without nodePorts (allocateLoadBalancerNodePorts: false)
// is served with its endpoints, checked by themselves, in node mode.
func TestNoNodePortsServedWithPods(t *testing.T) {
	no := false
	s := svc("default", "web", 0, func(s *corev1.Service) {
		s.Spec.AllocateLoadBalancerNodePorts = &no
		s.Spec.Ports[0].NodePort = 0
	})
	in := Input{Nodes: nodes[:1], Services: []*corev1.Service{s},
		Slices: []*Slice{slice("default", "web", 8080, ep{ip: "10.244.0.5", node: "n1", ready: true})}}
	o := defaults()
	o.TrackNodes = true
	for _, memo := range []*Memo{nil, {}} {
		in.Memo = memo
		r := Compute(in, o)
		if got := servers(r); !reflect.DeepEqual(got, map[string]string{"be_default_web_80": "10.244.0.5:8080"}) {
			t.Errorf("servers %v (problems %v)", got, reasons(r))
		}
		if be := r.Config.Backends[len(r.Config.Backends)-1]; be.TrackNodes || !be.Check.Enabled {
			t.Errorf("backend %+v: pods are checked by themselves, not tracked", be)
		}
	}
	// With nodePorts allocated (the default), nodes as before.
	s.Spec.AllocateLoadBalancerNodePorts = nil
	if r := Compute(Input{Nodes: nodes[:1], Services: []*corev1.Service{s}}, o); len(reasons(r)) != 1 || reasons(r)[0] != "web:NoNodePort" {
		t.Errorf("problems %v", reasons(r))
	}
}

// A Service keeps its IP family: IPv6 first means the nodes' IPv6
// InternalIPs (checked by themselves: the nodes' backend is IPv4), and
// pods of that family.
func TestIPFamilies(t *testing.T) {
	dual := node("n1", "10.0.0.1", true, nil)
	dual.Status.Addresses = append(dual.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "2001:db8::a"})
	v4only := node("n2", "10.0.0.2", true, nil)
	fam := func(f ...corev1.IPFamily) svcOpt { return func(s *corev1.Service) { s.Spec.IPFamilies = f } }
	o := defaults()
	o.TrackNodes, o.NodeCheck = true, model.Check{Enabled: true}
	for _, tc := range []struct {
		name    string
		svc     *corev1.Service
		want    string
		tracked bool
	}{
		{"none given", svc("default", "web", 0), "10.0.0.1:30080 10.0.0.2:30080", true},
		{"IPv4", svc("default", "web", 0, fam(corev1.IPv4Protocol)), "10.0.0.1:30080 10.0.0.2:30080", true},
		{"IPv6: the nodes that have one", svc("default", "web", 0, fam(corev1.IPv6Protocol)), "[2001:db8::a]:30080", false},
		{"dual-stack, IPv4 first", svc("default", "web", 0, fam(corev1.IPv4Protocol, corev1.IPv6Protocol)), "10.0.0.1:30080 10.0.0.2:30080", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Compute(Input{Nodes: []*corev1.Node{dual, v4only}, Services: []*corev1.Service{tc.svc}}, o)
			if got := servers(r)["be_default_web_80"]; got != tc.want {
				t.Errorf("servers %q, want %q", got, tc.want)
			}
			be := r.Config.Backends[len(r.Config.Backends)-1]
			if be.TrackNodes != tc.tracked || be.Check.Enabled == tc.tracked {
				t.Errorf("tracked %v, checked %v", be.TrackNodes, be.Check.Enabled)
			}
		})
	}
	// Pods of the first family only.
	s := svc("default", "web", 0, fam(corev1.IPv6Protocol, corev1.IPv4Protocol))
	o.Targets = TargetPods
	r := Compute(Input{Nodes: []*corev1.Node{dual}, Services: []*corev1.Service{s}, Slices: []*Slice{
		slice("default", "web", 8080, ep{ip: "10.244.0.5", node: "n1", ready: true}),
		slice("default", "web", 8080, ep{ip: "2001:db8:1::5", node: "n1", ready: true}),
	}}, o)
	if got := servers(r)["be_default_web_80"]; got != "[2001:db8:1::5]:8080" {
		t.Errorf("pod servers %q", got)
	}
}
