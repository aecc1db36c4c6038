package lab

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
)

// CreateNode creates a Node with InternalIP ip and sets its Ready condition.
func CreateNode(ctx context.Context, c kubernetes.Interface, name, ip string, ready bool) error {
	n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}}
	n.Status.Conditions = []corev1.NodeCondition{readyCondition(ready)}
	_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

func readyCondition(ready bool) corev1.NodeCondition {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return corev1.NodeCondition{Type: corev1.NodeReady, Status: st, Reason: "Lab", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}
}

// SetNodeReady flips a Node's Ready condition.
func SetNodeReady(ctx context.Context, c kubernetes.Interface, name string, ready bool) error {
	n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	n.Status.Conditions = []corev1.NodeCondition{readyCondition(ready)}
	_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

// SetNodeExcluded adds or removes the exclude-from-external-load-balancers label.
func SetNodeExcluded(ctx context.Context, c kubernetes.Interface, name string, excluded bool) error {
	n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if excluded {
		n.Labels[desired.ExcludeLabel] = "true"
	} else {
		delete(n.Labels, desired.ExcludeLabel)
	}
	_, err = c.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	return err
}

// Service describes a LoadBalancer Service of our class with one TCP port
// (UDP with UDP).
type Service struct {
	Namespace, Name string
	Port, NodePort  int32
	Local           bool
	UDP             bool
	Annotations     map[string]string
}

// CreateService creates s.
func CreateService(ctx context.Context, c kubernetes.Interface, s Service) (*corev1.Service, error) {
	class := desired.DefaultClass
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, Annotations: s.Annotations},
		Spec: corev1.ServiceSpec{
			Type:              corev1.ServiceTypeLoadBalancer,
			LoadBalancerClass: &class,
			Selector:          map[string]string{"app": s.Name},
			Ports:             []corev1.ServicePort{{Name: "tcp", Port: s.Port, NodePort: s.NodePort, Protocol: corev1.ProtocolTCP}},
		},
	}
	if s.Local {
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
	if s.UDP {
		svc.Spec.Ports[0].Protocol = corev1.ProtocolUDP
	}
	return c.CoreV1().Services(s.Namespace).Create(ctx, svc, metav1.CreateOptions{})
}

// Endpoint is one pod behind a Service.
type Endpoint struct {
	IP, Node    string
	Ready       bool
	Terminating bool
}

// SliceFor builds the EndpointSlice the endpoint-slice controller would
// write for svc (one slice, port named like the Service port).
func SliceFor(namespace, svc string, targetPort int32, eps []Endpoint) *discoveryv1.EndpointSlice {
	name, proto := "tcp", corev1.ProtocolTCP
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: svc + "-lab",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "lab"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &targetPort, Protocol: &proto}},
		Endpoints:   []discoveryv1.Endpoint{},
	}
	for _, e := range eps {
		ready, serving, term, node := e.Ready, e.Ready || e.Terminating, e.Terminating, e.Node
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{e.IP},
			NodeName:   &node,
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &term},
		})
	}
	return sl
}

// ApplySlice creates or replaces the lab EndpointSlice of a Service.
func ApplySlice(ctx context.Context, c kubernetes.Interface, sl *discoveryv1.EndpointSlice) error {
	api := c.DiscoveryV1().EndpointSlices(sl.Namespace)
	cur, err := api.Get(ctx, sl.Name, metav1.GetOptions{})
	if err != nil {
		_, err = api.Create(ctx, sl, metav1.CreateOptions{})
		return err
	}
	sl.ResourceVersion = cur.ResourceVersion
	_, err = api.Update(ctx, sl, metav1.UpdateOptions{})
	return err
}
