package desired

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// wireguard is a UDP Service like the seed's: port 51820, nodePort 31820.
func wireguard(ns, name string, age int, opts ...svcOpt) *corev1.Service {
	s := svc(ns, name, age, func(s *corev1.Service) {
		s.Spec.Ports = []corev1.ServicePort{{Name: "wg", Port: 51820, NodePort: 31820, Protocol: corev1.ProtocolUDP}}
	})
	for _, o := range opts {
		o(s)
	}
	return s
}

// udpSlice is an EndpointSlice of svcName with one UDP port "wg".
func udpSlice(ns, svcName string, port int32, eps ...ep) *Slice {
	name, proto := "wg", corev1.ProtocolUDP
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: svcName + "-udp", Labels: map[string]string{discoveryv1.LabelServiceName: svcName}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
	}
	for _, e := range eps {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{e.ip},
			NodeName:   &e.node,
			Conditions: discoveryv1.EndpointConditions{Ready: &e.ready, Serving: &e.serving, Terminating: &e.terminating},
		})
	}
	return SliceOf(s)
}

// udpServers renders each UDP service as "balance addr:port[~] ...".
func udpServers(r Result) map[string]string {
	out := map[string]string{}
	for _, u := range r.Config.UDP {
		parts := []string{u.Balance}
		for _, s := range u.Servers {
			p := s.Key().String()
			if s.Drain {
				p += "~"
			}
			parts = append(parts, p)
		}
		out[u.Name] = strings.Join(parts, " ")
	}
	return out
}

func withUDPOn(o *Options) { o.UDP = true }

func TestComputeUDP(t *testing.T) {
	ready := func(ip, node string) ep { return ep{ip: ip, node: node, ready: true, serving: true} }
	tests := []struct {
		name     string
		in       Input
		opts     func(*Options)
		want     map[string]string // UDP services
		tcp      map[string]string // HAProxy backends
		problems []string
	}{
		{
			name: "Cluster policy: eligible nodes' InternalIP:nodePort (not NotReady n3, not excluded n4)",
			in:   Input{Nodes: nodes, Services: []*corev1.Service{wireguard("vpn", "wg", 0)}},
			opts: withUDPOn,
			want: map[string]string{"udp_vpn_wg_51820": "roundrobin 10.0.0.1:31820 10.0.0.2:31820"},
			tcp:  map[string]string{},
		},
		{
			name: "Local policy: only eligible nodes with a ready endpoint",
			in: Input{Nodes: nodes, Services: []*corev1.Service{wireguard("vpn", "wg", 0, local)},
				Slices: []*Slice{udpSlice("vpn", "wg", 51820, ready("10.244.0.1", "n2"), ready("10.244.0.3", "n3"))}},
			opts: withUDPOn,
			want: map[string]string{"udp_vpn_wg_51820": "roundrobin 10.0.0.2:31820"},
			tcp:  map[string]string{},
		},
		{
			name: "pods: endpoint address and the UDP target port; draining kept as drain",
			in: Input{Nodes: nodes, Services: []*corev1.Service{wireguard("vpn", "wg", 0)},
				Slices: []*Slice{udpSlice("vpn", "wg", 51821, ready("10.244.0.1", "n1"),
					ep{ip: "10.244.0.2", node: "n2", serving: true, terminating: true})}},
			opts: func(o *Options) { o.UDP, o.Targets = true, TargetPods },
			want: map[string]string{"udp_vpn_wg_51820": "roundrobin 10.244.0.1:51821 10.244.0.2:51821~"},
			tcp:  map[string]string{},
		},
		{
			name: "balance source by annotation; backend-port overrides the nodePort",
			in: Input{Nodes: nodes, Services: []*corev1.Service{wireguard("vpn", "wg", 0,
				annotate("balance", "source"), annotate("backend-port", "4500"))}},
			opts: withUDPOn,
			want: map[string]string{"udp_vpn_wg_51820": "source 10.0.0.1:4500 10.0.0.2:4500"},
			tcp:  map[string]string{},
		},
		{
			name: "annotation wins over the flag default",
			in:   Input{Nodes: nodes[:1], Services: []*corev1.Service{wireguard("vpn", "a", 0), wireguard("vpn", "b", 1, annotate("balance", "roundrobin"), func(s *corev1.Service) { s.Spec.Ports[0].Port = 51821 })}},
			opts: func(o *Options) { o.UDP = true; o.Defaults.Balance = "source" },
			want: map[string]string{"udp_vpn_a_51820": "source 10.0.0.1:31820", "udp_vpn_b_51821": "roundrobin 10.0.0.1:31820"},
			tcp:  map[string]string{},
		},
		{
			name:     "a balance the kernel path does not have: port left out with an Event",
			in:       Input{Nodes: nodes[:1], Services: []*corev1.Service{wireguard("vpn", "wg", 0, annotate("balance", "leastconn"))}},
			opts:     withUDPOn,
			want:     map[string]string{},
			tcp:      map[string]string{},
			problems: []string{"wg:UnsupportedBalance"},
		},
		{
			name: "TCP and UDP on the same port: HAProxy gets TCP only, the kernel UDP",
			in: Input{Nodes: nodes[:1], Services: []*corev1.Service{svc("kube-system", "dns", 0, func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{{Name: "tcp", Port: 53, NodePort: 30053, Protocol: corev1.ProtocolTCP},
					{Name: "udp", Port: 53, NodePort: 30054, Protocol: corev1.ProtocolUDP}}
			})}},
			opts: withUDPOn,
			want: map[string]string{"udp_kube-system_dns_53": "roundrobin 10.0.0.1:30054"},
			tcp:  map[string]string{"be_kube-system_dns_53": "10.0.0.1:30053"},
		},
		{
			name:     "UDP port conflict: the older Service keeps it",
			in:       Input{Nodes: nodes[:1], Services: []*corev1.Service{wireguard("vpn", "young", 5), wireguard("vpn", "old", 1)}},
			opts:     withUDPOn,
			want:     map[string]string{"udp_vpn_old_51820": "roundrobin 10.0.0.1:31820"},
			tcp:      map[string]string{},
			problems: []string{"young:PortConflict"},
		},
		{
			name:     "UDP off: skipped with an Event giving the reason",
			in:       Input{Nodes: nodes[:1], Services: []*corev1.Service{wireguard("vpn", "wg", 0)}},
			opts:     func(o *Options) { o.UDPOff = "--udp=off" },
			want:     map[string]string{},
			tcp:      map[string]string{},
			problems: []string{"wg:UnsupportedProtocol"},
		},
		{
			name:     "invalid annotation and no last good settings: left out, reported once",
			in:       Input{Nodes: nodes[:1], Services: []*corev1.Service{wireguard("vpn", "wg", 0, annotate("balance", "bogus"))}},
			opts:     withUDPOn,
			want:     map[string]string{},
			tcp:      map[string]string{},
			problems: []string{"wg:InvalidAnnotation"},
		},
		{
			name: "no nodePort in node mode",
			in: Input{Nodes: nodes[:1], Services: []*corev1.Service{wireguard("vpn", "wg", 0, func(s *corev1.Service) {
				s.Spec.Ports[0].NodePort = 0
			})}},
			opts:     withUDPOn,
			want:     map[string]string{},
			tcp:      map[string]string{},
			problems: []string{"wg:NoNodePort"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := defaults()
			if tt.opts != nil {
				tt.opts(&opts)
			}
			for _, memo := range []*Memo{nil, {}} {
				in := tt.in
				in.Memo = memo
				res := Compute(in, opts)
				if got := udpServers(res); !reflect.DeepEqual(got, tt.want) {
					t.Errorf("UDP = %v, want %v", got, tt.want)
				}
				if got := servers(res); !reflect.DeepEqual(got, tt.tcp) {
					t.Errorf("backends = %v, want %v", got, tt.tcp)
				}
				for _, f := range res.Config.Frontends {
					if strings.Contains(f.Name, "udp") || f.Binds[0].Port == 51820 {
						t.Errorf("a UDP port reached HAProxy: %+v", f)
					}
				}
				if got := reasons(res); !reflect.DeepEqual(got, tt.problems) {
					t.Errorf("problems = %v, want %v", got, tt.problems)
				}
				if len(tt.want) > 0 && len(res.Configured) == 0 {
					t.Errorf("a Service with only UDP ports is not listed as configured")
				}
			}
		})
	}
}

// The fast pass (only servers changed) keeps the UDP part and follows
// node changes, and gives what a full pass gives.
func TestComputeUDPFastPass(t *testing.T) {
	opts := defaults()
	opts.UDP = true
	memo := &Memo{}
	svcs := []*corev1.Service{svc("default", "web", 0), wireguard("vpn", "wg", 1, annotate("check", "false"))}
	ns := []*corev1.Node{node("n1", "10.0.0.1", true, nil), node("n2", "10.0.0.2", true, nil)}
	first := Compute(Input{Nodes: ns, Services: svcs, Memo: memo}, opts)
	if got := udpServers(first)["udp_vpn_wg_51820"]; got != "roundrobin 10.0.0.1:31820 10.0.0.2:31820" {
		t.Fatalf("first pass: %q", got)
	}
	ns2 := []*corev1.Node{ns[0], node("n2", "10.0.0.2", false, nil)} // n2 NotReady
	fast := Compute(Input{Nodes: ns2, Services: svcs, Memo: memo}, opts)
	if !fast.ServersOnly {
		t.Fatalf("the node change was not a fast pass")
	}
	full := Compute(Input{Nodes: ns2, Services: svcs}, opts)
	if got := udpServers(fast)["udp_vpn_wg_51820"]; got != "roundrobin 10.0.0.1:31820" {
		t.Errorf("fast pass: NotReady n2 still serves UDP: %q", got)
	}
	if !reflect.DeepEqual(fast.Config.UDP, full.Config.UDP) || !reflect.DeepEqual(reasons(fast), reasons(full)) {
		t.Errorf("fast pass %+v differs from a full pass %+v", fast.Config.UDP, full.Config.UDP)
	}
	if len(fast.Configured) != 2 {
		t.Errorf("configured = %d Services, want 2", len(fast.Configured))
	}
}
