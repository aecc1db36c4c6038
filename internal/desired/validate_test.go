package desired

import (
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A Service the apiserver would not admit (render reads files) is not
// configured, with a problem naming what is wrong; it never reaches the
// model with its name as it is or a port wrapped to 16 bits. UDP ports
// too (the nftables side).
func TestInvalidServiceRefused(t *testing.T) {
	port := func(p, node int32) svcOpt {
		return func(s *corev1.Service) { s.Spec.Ports[0].Port, s.Spec.Ports[0].NodePort = p, node }
	}
	udp := func(s *corev1.Service) { s.Spec.Ports[0].Protocol = corev1.ProtocolUDP }
	for _, tc := range []struct {
		name string
		svc  *corev1.Service
		want string // in the problem's message
	}{
		{"newline in name", svc("default", "web\n\tbind :81", 1), `name "web\n\tbind :81"`},
		{"comment in namespace", svc("de#fault", "web", 1), `namespace "de#fault"`},
		{"space and quotes", svc("default", `we b"`, 1), "is not a DNS label"},
		{"unicode", svc("default", "wéb", 1), "is not a DNS label"},
		{"upper case", svc("default", "Web", 1), "is not a DNS label"},
		{"port 70000", svc("default", "web", 1, port(70000, 30080)), "port 70000 is outside 1-65535"},
		{"port -80", svc("default", "web", 1, port(-80, 30080)), "port -80 is outside"},
		{"port 0", svc("default", "web", 1, port(0, 30080)), "port 0 is outside"},
		{"nodePort 99999", svc("default", "web", 1, port(80, 99999)), "nodePort 99999 is outside"},
		{"nodePort -1", svc("default", "web", 1, port(80, -1)), "nodePort -1 is outside"},
		{"targetPort 70000", svc("default", "web", 1, func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(70000) }), "targetPort 70000"},
		{"healthCheckNodePort", svc("default", "web", 1, local, func(s *corev1.Service) { s.Spec.HealthCheckNodePort = 65536 }), "healthCheckNodePort 65536"},
		{"UDP port 70000", svc("default", "dns", 1, udp, port(70000, 30053)), "port 70000 is outside"},
		{"UDP name", svc("default", "dns\nx", 1, udp), "is not a DNS label"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok := svc("default", "other", 0, func(s *corev1.Service) { s.Spec.Ports[0].Port = 8080 })
			opts := defaults()
			opts.UDP = true
			in := Input{Services: []*corev1.Service{tc.svc, ok}, Nodes: nodes, Memo: &Memo{}}
			res := Compute(in, opts)
			if again := Compute(in, opts); len(again.Problems) != len(res.Problems) || len(again.Config.Frontends) != len(res.Config.Frontends) {
				t.Errorf("a second pass with the Memo: %d problems, %d frontends; the first %d, %d",
					len(again.Problems), len(again.Config.Frontends), len(res.Problems), len(res.Config.Frontends))
			}
			var msgs []string
			for _, p := range res.Problems {
				if p.Service == tc.svc && p.Reason == ReasonInvalidService {
					msgs = append(msgs, p.Message)
				}
			}
			if len(msgs) != 1 || !strings.Contains(msgs[0], tc.want) || strings.Contains(msgs[0], "\n") {
				t.Fatalf("problems %q, want one InvalidService naming %q on one line", msgs, tc.want)
			}
			if len(res.Config.Frontends) != 1 || res.Config.Frontends[0].Service != "default/other" || len(res.Config.UDP) != 0 {
				t.Errorf("frontends %+v, UDP %+v: want default/other's alone", res.Config.Frontends, res.Config.UDP)
			}
			for _, c := range res.Configured {
				if c == tc.svc {
					t.Error("the refused Service is listed as configured")
				}
			}
		})
	}
}

// Node and endpoint addresses that are no server's (unspecified,
// broadcast, multicast, unparsable) never become servers, and each is
// named in Result.Skipped, with its object.
func TestSkippedAddresses(t *testing.T) {
	ns := []*corev1.Node{
		node("good", "10.0.0.1", true, nil),
		node("zero", "0.0.0.0", true, nil),
		node("all6", "::", true, nil),
		node("bcast", "255.255.255.255", true, nil),
		node("mcast", "224.0.0.1", true, nil),
		node("junk", "10.0.0.x", true, nil),
	}
	eps := slice("default", "web", 8080, ep{ip: "10.1.0.1", node: "good", ready: true}, ep{ip: "0.0.0.0", node: "good", ready: true},
		ep{ip: "ff02::1", node: "good", ready: true}, ep{ip: "bogus\nline", node: "good", ready: true})
	for _, targets := range []string{TargetNodes, TargetPods} {
		opts := defaults()
		opts.Targets = targets
		res := Compute(Input{Services: []*corev1.Service{svc("default", "web", 1)}, Slices: []*Slice{eps}, Nodes: ns}, opts)
		got := servers(res)["be_default_web_80"]
		want := map[string]string{TargetNodes: "10.0.0.1:30080", TargetPods: "10.1.0.1:8080"}[targets]
		if got != want {
			t.Errorf("%s: servers %q, want %q", targets, got, want)
		}
		joined := strings.Join(res.Skipped, "\n")
		for _, w := range []string{`Node "zero": InternalIP "0.0.0.0" is the unspecified address`, `Node "all6"`, `Node "bcast"`,
			`Node "mcast"`, `Node "junk": InternalIP "10.0.0.x" is not an IP address`,
			`EndpointSlice "default/web-abc": endpoint address "0.0.0.0"`, `"bogus\nline" is not an IP address`} {
			if !strings.Contains(joined, w) {
				t.Errorf("%s: Skipped lacks %s:\n%s", targets, w, joined)
			}
		}
		if len(res.Skipped) != 8 || strings.Contains(joined, "good") {
			t.Errorf("%s: Skipped has %d entries, want 8 (3 slice, 5 node):\n%s", targets, len(res.Skipped), joined)
		}
	}
}

// identifier is what every name in the model may look like.
var identifier = regexp.MustCompile(`^(fe|be|udp)_[a-z0-9_-]+$`)

// FuzzServiceSpec: a Service read from a file (render) with any
// namespace, name and port numbers. Its frontends, backends and UDP ports
// have names of the safe alphabet, listen on exactly its port, and reach
// exactly its nodePort, never a number wrapped to 16 bits; or it is
// refused with an InvalidService problem.
func FuzzServiceSpec(f *testing.F) {
	f.Add("default", "web", int32(80), int32(30080), false)
	f.Add("default", "web\n\tbind :81", int32(80), int32(30080), true)
	f.Add("de#fault", "web", int32(70000), int32(99999), false)
	f.Add("ns", "dns", int32(-80), int32(0), true)
	f.Fuzz(func(t *testing.T, ns, name string, port, nodePort int32, udp bool) {
		s := svc(ns, name, 1, func(s *corev1.Service) {
			s.Spec.Ports[0].Port, s.Spec.Ports[0].NodePort = port, nodePort
			if udp {
				s.Spec.Ports[0].Protocol = corev1.ProtocolUDP
			}
		})
		opts := defaults()
		opts.UDP = true
		res := Compute(Input{Services: []*corev1.Service{s}, Nodes: nodes}, opts)
		refused := false
		for _, p := range res.Problems {
			refused = refused || p.Reason == ReasonInvalidService
		}
		for _, fe := range res.Config.Frontends {
			if !identifier.MatchString(fe.Name) || !identifier.MatchString(fe.Backend) {
				t.Fatalf("frontend %q, backend %q: outside the grammar", fe.Name, fe.Backend)
			}
			for _, b := range fe.Binds {
				if int32(b.Port) != port {
					t.Fatalf("port %d bound as %d", port, b.Port)
				}
			}
		}
		for _, be := range res.Config.Backends {
			for _, sv := range be.Servers {
				if be.Name != model.NodesBackend && int32(sv.Port) != nodePort {
					t.Fatalf("nodePort %d: server on %d", nodePort, sv.Port)
				}
			}
		}
		for _, u := range res.Config.UDP {
			if !identifier.MatchString(u.Name) || int32(u.Port()) != port {
				t.Fatalf("UDP port %q on %d, want %d", u.Name, u.Port(), port)
			}
		}
		configured := len(res.Config.Frontends)+len(res.Config.UDP) > 0
		if refused && configured || !refused && !configured && nodePort != 0 {
			t.Fatalf("%q/%q ports %d/%d: refused %v, configured %v", ns, name, port, nodePort, refused, configured)
		}
	})
}
