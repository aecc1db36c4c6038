package desired

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

var class = DefaultClass

func node(name, ip string, ready bool, labels map[string]string) *corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: corev1.NodeStatus{
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "203.0.113.1"}, {Type: corev1.NodeInternalIP, Address: ip}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}},
		},
	}
}

type svcOpt func(*corev1.Service)

func svc(ns, name string, age int, opts ...svcOpt) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(time.Unix(int64(1000+age), 0))},
		Spec: corev1.ServiceSpec{
			Type:              corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass: &class,
			Ports:             []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}},
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func annotate(k, v string) svcOpt {
	return func(s *corev1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[settings.Prefix+k] = v
	}
}

func local(s *corev1.Service) {
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
}

type ep struct {
	ip, node                    string
	ready, serving, terminating bool
}

func slice(ns, svcName string, port int32, eps ...ep) *Slice {
	return SliceOf(endpointSlice(ns, svcName, port, eps...))
}

// endpointSlice is the EndpointSlice slice converts.
func endpointSlice(ns, svcName string, port int32, eps ...ep) *discoveryv1.EndpointSlice {
	name := "http"
	proto := corev1.ProtocolTCP
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: svcName + "-abc", Labels: map[string]string{discoveryv1.LabelServiceName: svcName}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
	}
	for _, e := range eps {
		e := e
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{e.ip},
			NodeName:   &e.node,
			Conditions: discoveryv1.EndpointConditions{Ready: &e.ready, Serving: &e.serving, Terminating: &e.terminating},
		})
	}
	return s
}

var nodes = []*corev1.Node{
	node("n1", "10.0.0.1", true, nil),
	node("n2", "10.0.0.2", true, nil),
	node("n3", "10.0.0.3", false, nil),                                // not ready
	node("n4", "10.0.0.4", true, map[string]string{ExcludeLabel: ""}), // excluded
}

func defaults() Options {
	return Options{Class: DefaultClass, Targets: TargetNodes, Defaults: settings.Defaults()}
}

// servers renders each backend's servers as "addr:port[~]" (~: drain).
func servers(r Result) map[string]string {
	out := map[string]string{}
	for _, b := range r.Config.Backends {
		var parts []string
		for _, s := range b.Servers {
			p := s.Key().String()
			if s.Drain {
				p += "~"
			}
			parts = append(parts, p)
		}
		out[b.Name] = strings.Join(parts, " ")
	}
	return out
}

func reasons(r Result) []string {
	var out []string
	for _, p := range r.Problems {
		out = append(out, p.Service.Name+":"+p.Reason)
	}
	return out
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name     string
		in       Input
		opts     func(*Options)
		want     map[string]string
		problems []string
	}{
		{
			name: "cluster policy: every eligible node",
			in:   Input{Services: []*corev1.Service{svc("default", "web", 0)}, Nodes: nodes},
			want: map[string]string{"be_default_web_80": "10.0.0.1:30080 10.0.0.2:30080"},
		},
		{
			name: "cluster policy: slices without an endpoint of the port: no servers (kube-proxy refuses on every node)",
			in: Input{Services: []*corev1.Service{svc("default", "web", 0)}, Nodes: nodes,
				Slices: []*Slice{slice("default", "web", 8080, ep{ip: "192.168.0.2", node: "n1", ready: false, serving: false})}},
			want: map[string]string{"be_default_web_80": ""},
		},
		{
			name: "cluster policy: a serving terminating endpoint keeps every eligible node",
			in: Input{Services: []*corev1.Service{svc("default", "web", 0)}, Nodes: nodes,
				Slices: []*Slice{slice("default", "web", 8080, ep{ip: "192.168.0.1", node: "n2", ready: false, serving: true, terminating: true})}},
			want: map[string]string{"be_default_web_80": "10.0.0.1:30080 10.0.0.2:30080"},
		},
		{
			name: "local policy: only nodes with ready endpoints, terminating ones drain",
			in: Input{Services: []*corev1.Service{svc("default", "web", 0, local)}, Nodes: nodes,
				Slices: []*Slice{slice("default", "web", 8080,
					ep{ip: "192.168.0.1", node: "n2", ready: false, serving: true, terminating: true},
					ep{ip: "192.168.0.2", node: "n1", ready: false, serving: false},
					ep{ip: "192.168.0.3", node: "n4", ready: true, serving: true}, // excluded node
				)}},
			want: map[string]string{"be_default_web_80": "10.0.0.2:30080~"},
		},
		{
			name: "local policy: a ready endpoint beats a draining one on the same node",
			in: Input{Services: []*corev1.Service{svc("default", "web", 0, local)}, Nodes: nodes,
				Slices: []*Slice{slice("default", "web", 8080,
					ep{ip: "192.168.0.1", node: "n1", ready: false, serving: true, terminating: true},
					ep{ip: "192.168.0.2", node: "n1", ready: true, serving: true},
				)}},
			want: map[string]string{"be_default_web_80": "10.0.0.1:30080"},
		},
		{
			name: "pods targets use endpoint addresses and target ports",
			in: Input{Services: []*corev1.Service{svc("default", "web", 0)}, Nodes: nodes,
				Slices: []*Slice{slice("default", "web", 8080,
					ep{ip: "192.168.0.1", node: "n1", ready: true, serving: true},
					ep{ip: "192.168.0.2", node: "n1", serving: true, terminating: true},
					ep{ip: "192.168.0.3", node: "n1"},
				)}},
			opts: func(o *Options) { o.Targets = TargetPods },
			want: map[string]string{"be_default_web_80": "192.168.0.1:8080 192.168.0.2:8080~"},
		},
		{
			name: "backend-port annotation overrides the nodePort",
			in:   Input{Services: []*corev1.Service{svc("default", "web", 0, annotate("backend-port", "32000"))}, Nodes: nodes[:1]},
			want: map[string]string{"be_default_web_80": "10.0.0.1:32000"},
		},
		{
			name: "selection: other class, ClusterIP, NodePort without opt-in are ignored",
			in: Input{Nodes: nodes[:1], Services: []*corev1.Service{
				svc("a", "other-class", 0, func(s *corev1.Service) { c := "x/y"; s.Spec.LoadBalancerClass = &c }),
				svc("a", "no-class", 0, func(s *corev1.Service) { s.Spec.LoadBalancerClass = nil }),
				svc("a", "clusterip", 0, func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }),
				svc("a", "nodeport", 0, func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }),
				svc("a", "nodeport-in", 0, func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort; s.Spec.Ports[0].Port = 81 }, annotate("enabled", "true")),
			}},
			want: map[string]string{"be_a_nodeport-in_81": "10.0.0.1:30080"},
		},
		{
			name: "class-less LoadBalancers when asked",
			in:   Input{Nodes: nodes[:1], Services: []*corev1.Service{svc("a", "no-class", 0, func(s *corev1.Service) { s.Spec.LoadBalancerClass = nil })}},
			opts: func(o *Options) { o.ClassLess = true },
			want: map[string]string{"be_a_no-class_80": "10.0.0.1:30080"},
		},
		{
			name: "single-Service mode with backend name",
			in: Input{Nodes: nodes[:1], Services: []*corev1.Service{
				svc("ingress", "nginx", 0, func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort; s.Spec.LoadBalancerClass = nil }),
				svc("default", "web", 0),
			}},
			opts: func(o *Options) { o.Service, o.Backend = "ingress/nginx", "be_ingress_https" },
			want: map[string]string{"be_ingress_https": "10.0.0.1:30080"},
		},
		{
			name: "port conflict: the older Service keeps the port",
			in: Input{Nodes: nodes[:1], Services: []*corev1.Service{
				svc("default", "young", 5),
				svc("default", "old", 1),
			}},
			want:     map[string]string{"be_default_old_80": "10.0.0.1:30080"},
			problems: []string{"young:PortConflict"},
		},
		{
			name: "UDP ports are skipped with a problem, TCP ports stay",
			in: Input{Nodes: nodes[:1], Services: []*corev1.Service{svc("default", "dns", 0, func(s *corev1.Service) {
				s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "udp", Port: 53, NodePort: 30053, Protocol: corev1.ProtocolUDP})
			})}},
			want:     map[string]string{"be_default_dns_80": "10.0.0.1:30080"},
			problems: []string{"dns:UnsupportedProtocol"},
		},
		{
			name:     "invalid annotation without a last good config: left out",
			in:       Input{Nodes: nodes[:1], Services: []*corev1.Service{svc("default", "web", 0, annotate("balance", "roundrobin\nlisten x"))}},
			want:     map[string]string{},
			problems: []string{"web:InvalidAnnotation"},
		},
		{
			name: "invalid annotation with a last good config: kept",
			in: Input{Nodes: nodes[:1], Services: []*corev1.Service{svc("default", "web", 0, annotate("balance", "bogus"))},
				LastGood: map[string]*settings.Settings{"default/web": func() *settings.Settings { s := settings.Defaults(); s.Balance = "leastconn"; return &s }()}},
			want:     map[string]string{"be_default_web_80": "10.0.0.1:30080"},
			problems: []string{"web:InvalidAnnotation"},
		},
		{
			name:     "no nodePort",
			in:       Input{Nodes: nodes[:1], Services: []*corev1.Service{svc("default", "web", 0, func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 0 })}},
			want:     map[string]string{},
			problems: []string{"web:NoNodePort"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := defaults()
			if tc.opts != nil {
				tc.opts(&o)
			}
			r := Compute(tc.in, o)
			if got := servers(r); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("servers = %v, want %v", got, tc.want)
			}
			if got := reasons(r); !reflect.DeepEqual(got, tc.problems) {
				t.Errorf("problems = %v, want %v", got, tc.problems)
			}
			if len(r.Config.Frontends) != len(r.Config.Backends) {
				t.Errorf("%d frontends for %d backends", len(r.Config.Frontends), len(r.Config.Backends))
			}
		})
	}
}

func TestLastGoodSettingsApply(t *testing.T) {
	last := settings.Defaults()
	last.Balance = "leastconn"
	in := Input{Nodes: nodes[:1], Services: []*corev1.Service{svc("default", "web", 0, annotate("check-interval", "2s#"))},
		LastGood: map[string]*settings.Settings{"default/web": &last}}
	r := Compute(in, defaults())
	if r.Config.Backends[0].Balance != "leastconn" || *r.Good["default/web"] != last || r.Good["default/web"] != in.LastGood["default/web"] {
		t.Fatalf("backend %+v, good %+v", r.Config.Backends[0], r.Good)
	}
	if !strings.Contains(r.Problems[0].Message, "check-interval") {
		t.Errorf("message does not name the annotation: %s", r.Problems[0].Message)
	}
}

func TestFrontendSettingsAndBinds(t *testing.T) {
	in := Input{Nodes: nodes[:1], Services: []*corev1.Service{svc("default", "web", 0,
		annotate("accept-proxy", "true"), annotate("maxconn", "100"), annotate("send-proxy-v2", "true"), annotate("check", "false"))}}
	o := defaults()
	o.Binds = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}
	r := Compute(in, o)
	fe, be := r.Config.Frontends[0], r.Config.Backends[0]
	if !fe.AcceptProxy || fe.MaxConn != 100 || len(fe.Binds) != 2 || fe.Binds[1].Port != 80 || fe.Backend != be.Name {
		t.Errorf("frontend %+v", fe)
	}
	if !be.SendProxyV2 || be.Check.Enabled {
		t.Errorf("backend %+v", be)
	}
}

// bigInput is n Services of the Local policy on 20 nodes, each with the
// endpoints eps(i) gives.
func bigInput(n int, eps func(i int) []ep) Input {
	var in Input
	for i := 0; i < 20; i++ {
		in.Nodes = append(in.Nodes, node(fmt.Sprint("n", i), fmt.Sprintf("10.0.1.%d", i), true, nil))
	}
	for i := 0; i < n; i++ {
		s := svc("default", fmt.Sprint("svc", i), i, local)
		s.Spec.Ports[0].Port = int32(20000 + i)
		in.Services = append(in.Services, s)
		in.Slices = append(in.Slices, slice("default", fmt.Sprint("svc", i), 8080, eps(i)...))
	}
	return in
}

func BenchmarkCompute(b *testing.B) {
	const n = 10000
	in := bigInput(n, func(i int) []ep {
		var eps []ep
		for j := 0; j < 5; j++ {
			eps = append(eps, ep{ip: fmt.Sprintf("192.168.%d.%d", i%250, j), node: fmt.Sprint("n", (i+j)%20), ready: true, serving: true})
		}
		return eps
	})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := Compute(in, defaults())
		if len(r.Config.Backends) != n {
			b.Fatal(len(r.Config.Backends))
		}
	}
}

// BenchmarkComputeMemo is BenchmarkCompute as the controller runs it: with
// a Memo, one EndpointSlice replaced between passes.
func BenchmarkComputeMemo(b *testing.B) {
	const n = 10000
	in := bigInput(n, func(i int) []ep {
		return []ep{
			{ip: "192.168.0.1", node: fmt.Sprint("n", i%20), ready: true, serving: true},
			{ip: "192.168.0.2", node: fmt.Sprint("n", (i+1)%20), ready: true, serving: true},
		}
	})
	in.Memo = &Memo{}
	Compute(in, defaults())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % n
		in.Slices[k] = slice("default", fmt.Sprint("svc", k), 8080,
			ep{ip: "192.168.0.1", node: fmt.Sprint("n", (k+i)%20), ready: true, serving: true})
		if r := Compute(in, defaults()); len(r.Config.Backends) != n {
			b.Fatal(len(r.Config.Backends))
		}
	}
}
