package desired

import (
	"net/netip"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func dualNode(name, v4, v6 string) *corev1.Node {
	n := node(name, v4, true, nil)
	n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: v6})
	return n
}

// A dual-stack Service with an address of each family has a frontend and
// a backend per family: IPv4 clients to the nodes' IPv4 InternalIPs
// (following their nodes), IPv6 clients to their IPv6 ones (checked by
// themselves); single-stack Services, and Services listening on no
// address of a family, keep one frontend. With and without the memo, and
// after a node's IPv6 address changes (a pass of servers only).
func TestFrontendPerFamily(t *testing.T) {
	a := netip.MustParseAddr
	fams := func(f ...corev1.IPFamily) svcOpt { return func(s *corev1.Service) { s.Spec.IPFamilies = f } }
	v4, v6 := corev1.IPv4Protocol, corev1.IPv6Protocol
	fb := func(addr string, port uint16) model.Bind {
		return model.Bind{Addr: a(addr), Port: port, Transparent: true}
	}
	o := defaults()
	o.Pooled, o.UDP, o.TrackNodes, o.NodeCheck = true, true, true, model.Check{Enabled: true}
	in := Input{
		Nodes: []*corev1.Node{dualNode("n1", "10.0.0.1", "2001:db8::a"), node("n2", "10.0.0.2", true, nil)},
		Services: []*corev1.Service{
			svc("default", "dual", 0, port443, fams(v4, v6)),
			svc("default", "six", 1, port443, fams(v6, v4)),
			svc("default", "one", 2, port443, fams(v4, v6)), // an IPv4 address only: one frontend
			wireguard("default", "vpn", 3, fams(v4, v6)),
		},
		Addresses: map[string][]netip.Addr{
			"default/dual": {a("198.18.0.1"), a("2001:db8:18::1")},
			"default/six":  {a("198.18.0.2"), a("2001:db8:18::2")},
			"default/one":  {a("198.18.0.3")},
			"default/vpn":  {a("198.18.0.4"), a("2001:db8:18::4")},
		},
	}
	wantBinds := map[string][]model.Bind{
		"fe_default_dual_443":    {fb("198.18.0.1", 443)},
		"fe_default_dual_443_v6": {fb("2001:db8:18::1", 443)},
		"fe_default_six_443":     {fb("2001:db8:18::2", 443)},
		"fe_default_six_443_v4":  {fb("198.18.0.2", 443)},
		"fe_default_one_443":     {fb("198.18.0.3", 443)},
		"udp_default_vpn_51820":  {{Addr: a("198.18.0.4"), Port: 51820}, {Addr: a("2001:db8:18::4"), Port: 51820}},
	}
	wantServers := map[string]string{
		"_nodes":                 "10.0.0.1:0 10.0.0.2:0",
		"be_default_dual_443":    "10.0.0.1:30443 10.0.0.2:30443",
		"be_default_dual_443_v6": "[2001:db8::a]:30443",
		"be_default_six_443":     "[2001:db8::a]:30443",
		"be_default_six_443_v4":  "10.0.0.1:30443 10.0.0.2:30443",
		"be_default_one_443":     "10.0.0.1:30443 10.0.0.2:30443",
	}
	tracked := map[string]bool{"be_default_dual_443": true, "be_default_six_443_v4": true, "be_default_one_443": true}
	check := func(t *testing.T, r Result, servers4 map[string]string, udp string) {
		t.Helper()
		if got := binds(r); !reflect.DeepEqual(got, wantBinds) {
			t.Errorf("binds %v\nwant %v", got, wantBinds)
		}
		if got := servers(r); !reflect.DeepEqual(got, servers4) {
			t.Errorf("servers %v\nwant %v", got, servers4)
		}
		for _, f := range r.Config.Frontends {
			if f.Backend != "be"+f.Name[2:] {
				t.Errorf("frontend %s uses %s", f.Name, f.Backend)
			}
		}
		for _, b := range r.Config.Backends {
			if b.Name != model.NodesBackend && (b.TrackNodes != tracked[b.Name] || b.Check.Enabled == tracked[b.Name]) {
				t.Errorf("%s: tracked %v, checked %v", b.Name, b.TrackNodes, b.Check.Enabled)
			}
		}
		if got := udpServers(r)["udp_default_vpn_51820"]; got != "roundrobin "+udp {
			t.Errorf("UDP servers %q, want %q", got, udp)
		}
		if len(r.Problems) != 0 {
			t.Errorf("problems %v", reasons(r))
		}
	}
	var memo Memo
	for _, m := range []*Memo{nil, &memo, &memo} {
		in.Memo = m
		check(t, Compute(in, o), wantServers, "10.0.0.1:31820 10.0.0.2:31820 [2001:db8::a]:31820")
	}
	// n2 gets an IPv6 address too: the IPv6 backends gain it.
	in.Nodes = []*corev1.Node{in.Nodes[0], dualNode("n2", "10.0.0.2", "2001:db8::b")}
	wantServers["be_default_dual_443_v6"] = "[2001:db8::a]:30443 [2001:db8::b]:30443"
	wantServers["be_default_six_443"] = "[2001:db8::a]:30443 [2001:db8::b]:30443"
	udp := "10.0.0.1:31820 10.0.0.2:31820 [2001:db8::a]:31820 [2001:db8::b]:31820"
	r := Compute(in, o)
	if !r.ServersOnly {
		t.Errorf("a node's address changed: want a pass of servers only")
	}
	check(t, r, wantServers, udp)
	in.Memo = nil
	check(t, Compute(in, o), wantServers, udp)

	// Pods: each family's backend has the Pod IPs of that family.
	o.Targets = TargetPods
	in.Services, in.Addresses = in.Services[:1], map[string][]netip.Addr{"default/dual": in.Addresses["default/dual"]}
	in.Slices = []*Slice{slice("default", "dual", 8443, ep{ip: "10.244.0.5", node: "n1", ready: true}),
		slice("default", "dual", 8443, ep{ip: "2001:db8:1::5", node: "n1", ready: true})}
	for i := range in.Slices {
		in.Slices[i].Ports[0].Name = "https"
	}
	got := servers(Compute(in, o))
	if want := map[string]string{"be_default_dual_443": "10.244.0.5:8443", "be_default_dual_443_v6": "[2001:db8:1::5]:8443"}; !reflect.DeepEqual(got, want) {
		t.Errorf("pod servers %v, want %v", got, want)
	}
}
