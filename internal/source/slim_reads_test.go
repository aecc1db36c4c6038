package source

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// TestSlimKeepsWhatComputeReads: the desired state of Services, nodes and
// EndpointSlices as the informers keep them (through Slim) is the one of
// the objects as written, under each choice of targets and checks; a
// field Compute reads that Slim drops shows here (as
// spec.allocateLoadBalancerNodePorts did: a LoadBalancer Service without
// nodePorts was refused NoNodePort instead of served by its pods).
func TestSlimKeepsWhatComputeReads(t *testing.T) {
	class := "haproxy-k8s-sync.io/lb"
	no, dual := false, corev1.IPFamilyPolicyPreferDualStack
	svc := func(name string, edit func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: k8stypes.UID("uid-" + name), Generation: 2, CreationTimestamp: metav1.Now(),
				Labels: map[string]string{"tier": "web"}, Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class, Selector: map[string]string{"app": name},
				Ports:     []corev1.ServicePort{{Name: "tcp", Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}},
				ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"}, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
				ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster, SessionAffinity: corev1.ServiceAffinityNone},
		}
		edit(s)
		return s
	}
	services := []*corev1.Service{
		svc("plain", func(*corev1.Service) {}),
		svc("no-node-ports", func(s *corev1.Service) {
			s.Spec.AllocateLoadBalancerNodePorts, s.Spec.Ports[0].NodePort, s.Spec.Ports[0].Port = &no, 0, 81
		}),
		svc("local", func(s *corev1.Service) {
			s.Spec.ExternalTrafficPolicy, s.Spec.HealthCheckNodePort, s.Spec.Ports[0].Port, s.Spec.Ports[0].NodePort =
				corev1.ServiceExternalTrafficPolicyLocal, 32100, 82, 30082
		}),
		svc("ranges-affinity", func(s *corev1.Service) {
			s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.Ports[0].Port, s.Spec.Ports[0].NodePort = 83, 30083
		}),
		svc("annotated", func(s *corev1.Service) {
			s.Annotations[settings.Prefix+"check"] = "true"
			s.Annotations[settings.Prefix+"balance"] = "leastconn"
			s.Spec.Ports[0].Port, s.Spec.Ports[0].NodePort = 84, 30084
		}),
		svc("dual", func(s *corev1.Service) {
			s.Spec.IPFamilyPolicy, s.Spec.IPFamilies = &dual, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
			s.Spec.Ports[0].Port, s.Spec.Ports[0].NodePort = 85, 30085
		}),
	}
	var slices []*discoveryv1.EndpointSlice
	for _, s := range services {
		port, ready := s.Spec.Ports[0].Port, true
		slices = append(slices, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: s.Name + "-1", Namespace: s.Namespace, Labels: map[string]string{discoveryv1.LabelServiceName: s.Name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &s.Spec.Ports[0].Name, Port: &port}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, NodeName: ptr("n1"),
				Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		})
	}
	node := func(name, ip string, ready corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/os": "linux"}},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}},
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: ready}}}}
	}
	nodes := []*corev1.Node{node("n1", "192.0.2.1", corev1.ConditionTrue), node("n2", "192.0.2.2", corev1.ConditionFalse)}

	raw := desired.Input{Services: services, Nodes: nodes}
	var kept desired.Input
	for _, s := range services {
		kept.Services = append(kept.Services, slim(t, s).(*corev1.Service))
	}
	for _, s := range slices {
		raw.Slices = append(raw.Slices, desired.SliceOf(s))
		kept.Slices = append(kept.Slices, slim(t, s).(*desired.Slice))
	}
	for _, n := range nodes {
		kept.Nodes = append(kept.Nodes, slim(t, n).(*corev1.Node))
	}
	for _, opts := range []desired.Options{
		{Class: class, Targets: desired.TargetNodes},
		{Class: class, Targets: desired.TargetNodes, LocalHealthCheck: true, TrackNodes: true, NodeCheck: model.Check{Enabled: true}},
		{Class: class, Targets: desired.TargetPods},
	} {
		t.Run(fmt.Sprintf("%s/local-check=%v/track=%v", opts.Targets, opts.LocalHealthCheck, opts.TrackNodes), func(t *testing.T) {
			want, got := desired.Compute(raw, opts), desired.Compute(kept, opts)
			if len(want.Config.Backends) < len(services) {
				t.Fatalf("only %d backends for %d Services: %+v", len(want.Config.Backends), len(services), want.Problems)
			}
			if !reflect.DeepEqual(got.Config, want.Config) {
				t.Errorf("config through Slim:\n%+v\nas written:\n%+v", got.Config, want.Config)
			}
			if g, w := problems(got.Problems), problems(want.Problems); !reflect.DeepEqual(g, w) {
				t.Errorf("problems through Slim %q, as written %q", g, w)
			}
		})
	}
}

func slim(t *testing.T, o any) any {
	t.Helper()
	out, err := Slim(o)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func problems(ps []desired.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Service.Namespace+"/"+p.Service.Name+" "+p.Reason+": "+p.Message)
	}
	return out
}

func ptr[T any](v T) *T { return &v }
