package desired

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// sport is a port of an EndpointSlice as the endpoint-slice controller
// writes it: a name ("" when the Service port has none; nilName for a
// hand-made slice that leaves it unset), a number and a protocol.
type sport struct {
	name    string
	nilName bool
	port    int32
	proto   corev1.Protocol
}

func tcp(name string, port int32) sport {
	return sport{name: name, port: port, proto: corev1.ProtocolTCP}
}

// realSlice is one EndpointSlice of Service svcName, shaped as the real
// controller shapes them (kube-controller-manager v1.36, see FIELD-NOTES):
// its own generated name, only the slice's ports (none for Pods that lack a
// named targetPort), every condition set.
func realSlice(svcName, suffix string, ports []sport, eps ...ep) *Slice {
	return realSliceIn("default", svcName, suffix, ports, eps...)
}

func realSliceIn(ns, svcName, suffix string, ports []sport, eps ...ep) *Slice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svcName + "-" + suffix, Labels: map[string]string{
			discoveryv1.LabelServiceName: svcName, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{},
	}
	for _, p := range ports {
		var ep discoveryv1.EndpointPort
		if !p.nilName {
			ep.Name = &p.name
		}
		ep.Port, ep.Protocol = &p.port, &p.proto
		s.Ports = append(s.Ports, ep)
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

func readyOn(ip, node string) ep { return ep{ip: ip, node: node, ready: true, serving: true} }
func termOn(ip, node string) ep {
	return ep{ip: ip, node: node, serving: true, terminating: true}
}

// Local policy counts a node for a Service port only when it hosts a ready
// (else serving and terminating) endpoint in a slice carrying that port by
// name, as kube-proxy does; pod targets take endpoints from the same slices.
func TestLocalCountsSlicesCarryingThePort(t *testing.T) {
	twoPorts := func(s *corev1.Service) {
		s.Spec.Ports = []corev1.ServicePort{
			{Name: "http", Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", Port: 9100, NodePort: 30910, Protocol: corev1.ProtocolTCP},
		}
	}
	unnamed := func(s *corev1.Service) { s.Spec.Ports[0].Name = "" }
	noCheck := annotate("check", "false")
	tests := []struct {
		name        string
		opts        []svcOpt
		slices      []*Slice
		track       bool
		nodes, pods map[string]string // servers by backend, node and pod targets
	}{{
		name: "a Pod lacking the named targetPort is in a slice without ports: its node does not count",
		slices: []*Slice{
			realSlice("web", "a1", []sport{tcp("http", 8080)}, readyOn("192.168.0.1", "n1")),
			realSlice("web", "b2", nil, readyOn("192.168.0.2", "n2")),
		},
		nodes: map[string]string{"be_default_web_80": "10.0.0.1:30080"},
		pods:  map[string]string{"be_default_web_80": "192.168.0.1:8080"},
	}, {
		name: "several slices of one port count together",
		slices: []*Slice{
			realSlice("web", "a1", []sport{tcp("http", 8080)}, readyOn("192.168.0.1", "n1")),
			realSlice("web", "a2", []sport{tcp("http", 8080)}, readyOn("192.168.0.2", "n2"), readyOn("192.168.0.3", "n2")),
		},
		nodes: map[string]string{"be_default_web_80": "10.0.0.1:30080 10.0.0.2:30080"},
		pods:  map[string]string{"be_default_web_80": "192.168.0.1:8080 192.168.0.2:8080 192.168.0.3:8080"},
	}, {
		name: "one slice per targetPort number: both carry the port by name",
		slices: []*Slice{
			realSlice("web", "a1", []sport{tcp("http", 8080)}, readyOn("192.168.0.1", "n1")),
			realSlice("web", "c3", []sport{tcp("http", 9090)}, readyOn("192.168.0.2", "n2")),
		},
		nodes: map[string]string{"be_default_web_80": "10.0.0.1:30080 10.0.0.2:30080"},
		pods:  map[string]string{"be_default_web_80": "192.168.0.1:8080 192.168.0.2:9090"},
	}, {
		name:   "a Service selecting nothing has one empty slice: no servers",
		slices: []*Slice{realSlice("web", "e0", nil)},
		nodes:  map[string]string{"be_default_web_80": ""},
		pods:   map[string]string{"be_default_web_80": ""},
	}, {
		name: "terminating endpoints drain where the port is carried, and count nowhere else",
		slices: []*Slice{
			realSlice("web", "a1", []sport{tcp("http", 8080)}, termOn("192.168.0.1", "n1"), readyOn("192.168.0.2", "n2"), termOn("192.168.0.4", "n2")),
			realSlice("web", "b2", nil, readyOn("192.168.0.3", "n1")),
		},
		nodes: map[string]string{"be_default_web_80": "10.0.0.1:30080~ 10.0.0.2:30080"},
		pods:  map[string]string{"be_default_web_80": "192.168.0.1:8080~ 192.168.0.2:8080 192.168.0.4:8080~"},
	}, {
		name: "ready and terminating (publishNotReadyAddresses) counts as ready, as kube-proxy reads it",
		slices: []*Slice{
			realSlice("web", "a1", []sport{tcp("http", 8080)}, ep{ip: "192.168.0.1", node: "n1", ready: true, serving: true, terminating: true}),
		},
		nodes: map[string]string{"be_default_web_80": "10.0.0.1:30080"},
		pods:  map[string]string{"be_default_web_80": "192.168.0.1:8080"},
	}, {
		name: "a ready endpoint in a slice without the port does not undrain its node",
		slices: []*Slice{
			realSlice("web", "a1", []sport{tcp("http", 8080)}, termOn("192.168.0.1", "n1")),
			realSlice("web", "b2", nil, readyOn("192.168.0.3", "n1")),
		},
		nodes: map[string]string{"be_default_web_80": "10.0.0.1:30080~"},
		pods:  map[string]string{"be_default_web_80": "192.168.0.1:8080~"},
	}, {
		name: "multi-port Service: a Pod with only one of the named ports counts for that one",
		opts: []svcOpt{twoPorts},
		slices: []*Slice{
			realSlice("web", "a1", []sport{tcp("http", 8080), tcp("metrics", 9100)}, readyOn("192.168.0.1", "n1")),
			realSlice("web", "d4", []sport{tcp("http", 8080)}, readyOn("192.168.0.2", "n2")),
		},
		nodes: map[string]string{"be_default_web_80": "10.0.0.1:30080 10.0.0.2:30080", "be_default_web_9100": "10.0.0.1:30910"},
		pods:  map[string]string{"be_default_web_80": "192.168.0.1:8080 192.168.0.2:8080", "be_default_web_9100": "192.168.0.1:9100"},
	}, {
		name: `an unnamed Service port matches name "", not a port without a name`,
		opts: []svcOpt{unnamed},
		slices: []*Slice{
			realSlice("web", "a1", []sport{tcp("", 8080)}, readyOn("192.168.0.1", "n1")),
			realSlice("web", "f5", []sport{{nilName: true, port: 8080, proto: corev1.ProtocolTCP}}, readyOn("192.168.0.2", "n2")),
		},
		nodes: map[string]string{"be_default_web_80": "10.0.0.1:30080"},
		pods:  map[string]string{"be_default_web_80": "192.168.0.1:8080"},
	}, {
		name: "a slice port of another protocol or without a number does not carry the port",
		slices: []*Slice{
			realSlice("web", "g6", []sport{{name: "http", port: 8080, proto: corev1.ProtocolUDP}}, readyOn("192.168.0.1", "n1")),
			realSlice("web", "h7", []sport{{name: "http", proto: corev1.ProtocolTCP}}, readyOn("192.168.0.2", "n2")),
		},
		nodes: map[string]string{"be_default_web_80": ""},
		pods:  map[string]string{"be_default_web_80": ""},
	}, {
		name:  "servers that follow their nodes: a NotReady node's server stays, only where the port is carried",
		opts:  []svcOpt{noCheck},
		track: true,
		slices: []*Slice{
			realSlice("web", "a1", []sport{tcp("http", 8080)}, readyOn("192.168.0.1", "n3")),
			realSlice("web", "b2", nil, readyOn("192.168.0.2", "n2")),
		},
		nodes: map[string]string{"be_default_web_80": "10.0.0.3:30080", model.NodesBackend: "10.0.0.1:0 10.0.0.2:0 10.0.0.3:0 10.0.0.4:0"},
		pods:  map[string]string{"be_default_web_80": "192.168.0.1:8080"},
	}}
	for _, tc := range tests {
		for _, targets := range []string{TargetNodes, TargetPods} {
			t.Run(fmt.Sprint(tc.name, "/", targets), func(t *testing.T) {
				o := defaults()
				o.Targets, o.TrackNodes = targets, tc.track
				in := Input{Services: []*corev1.Service{svc("default", "web", 0, append([]svcOpt{local}, tc.opts...)...)},
					Nodes: nodes, Slices: tc.slices}
				want := tc.nodes
				if targets == TargetPods {
					want = tc.pods
				}
				full := Compute(in, o)
				if got := servers(full); !reflect.DeepEqual(got, want) {
					t.Errorf("servers = %v, want %v", got, want)
				}
				if len(full.Problems) != 0 {
					t.Errorf("problems: %v", reasons(full))
				}
				// The memo's passes, full and servers-only, agree: reach
				// the same slices from an empty start, then back again.
				in.Memo = &Memo{}
				slices := in.Slices
				in.Slices = nil
				Compute(in, o)
				in.Slices = slices
				if got := servers(Compute(in, o)); !reflect.DeepEqual(got, want) {
					t.Errorf("with a memo: servers = %v, want %v", got, want)
				}
			})
		}
	}
}
