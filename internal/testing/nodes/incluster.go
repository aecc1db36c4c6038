package nodes

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/proc"
)

// InClusterControllers are the kube-controller-manager controllers of a
// tier started with Options.InCluster: kubeapi's, and those a chart's
// workload needs: DaemonSets making their Pods; the node lifecycle, which
// lifts the not-ready taint kubelet registers with once the node is Ready
// (a DaemonSet's Pods do not tolerate it); every namespace's
// kube-root-ca.crt, which a projected service-account token volume reads.
var InClusterControllers = append(append([]string(nil), kubeapi.Controllers...),
	"daemonset-controller", "node-lifecycle-controller", "root-ca-certificate-publisher-controller")

// ServiceIP is the ClusterIP of default/kubernetes in the tier: the first
// address of ServiceCIDR.
func ServiceIP() netip.Addr {
	return netip.MustParsePrefix(ServiceCIDR).Addr().Next()
}

// inClusterOptions is what Options.InCluster adds to the apiserver's
// options: its certificate names the addresses a Pod dials (the kubernetes
// Service's ClusterIP, the forwarder on the underlay); the ServiceAccount
// admission plugin on, so Pods get their token; the controllers above,
// before the caller's own flags (a later --controllers wins).
func inClusterOptions(o *kubeapi.Options, cmArgs []string) {
	o.CertIPs = append(o.CertIPs, net.ParseIP(ServiceIP().String()), net.ParseIP(UnderlayGateway))
	o.APIServerArgs = append(o.APIServerArgs, "--disable-admission-plugins=")
	o.ControllerManagerArgs = append([]string{"--controllers=" + strings.Join(InClusterControllers, ",")}, cmArgs...)
}

// publishAPIServer writes the endpoints of default/kubernetes: the
// forwarder at UnderlayGateway:APIPort, which every node reaches. The
// apiserver writes none (it advertises loopback, its reconciler is off),
// so without this kube-proxy has nowhere to send the Service's ClusterIP
// and a Pod's in-cluster client cannot connect.
func (t *Tier) publishAPIServer() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	port, name, proto := int32(APIPort), "https", corev1.ProtocolTCP
	ready := true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes", Labels: map[string]string{
			discoveryv1.LabelServiceName: "kubernetes",
			discoveryv1.LabelManagedBy:   "nodes.haproxy-k8s-sync.io",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{UnderlayGateway},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports: []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
	}
	if _, err := t.Client.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("default/kubernetes EndpointSlice: %w", err)
	}
	return nil
}

// bindDaemonPods stands in for kube-scheduler, which the tier does not
// run: a DaemonSet's controller creates each Pod for one node (required
// node affinity on the field metadata.name) and leaves the binding to a
// scheduler. Every bindEvery until stop, each Pod of the cluster with no
// node that names exactly one node so is bound to it.
func (t *Tier) bindDaemonPods(stop <-chan struct{}) {
	for i := 0; i < maxBindRounds; i++ {
		select {
		case <-stop:
			return
		case <-time.After(bindEvery):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		pods, err := t.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
		for _, p := range podsOrNone(pods, err) {
			node := affinityNode(&p)
			if node == "" || p.DeletionTimestamp != nil {
				continue
			}
			b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
				Target: corev1.ObjectReference{Kind: "Node", Name: node}}
			// A Pod bound meanwhile or gone is no error: the next round sees.
			_ = t.Client.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{})
		}
		cancel()
	}
}

const (
	bindEvery     = 200 * time.Millisecond
	maxBindRounds = 3 * 3600 * 5 // three hours of rounds, longer than any test
)

func podsOrNone(l *corev1.PodList, err error) []corev1.Pod {
	if err != nil || l == nil {
		return nil
	}
	return l.Items
}

// affinityNode is the one node a Pod's required node affinity names by
// metadata.name (as a DaemonSet's Pods do), or "".
func affinityNode(p *corev1.Pod) string {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchFields) != 1 {
		return ""
	}
	f := terms[0].MatchFields[0]
	if f.Key != "metadata.name" || f.Operator != corev1.NodeSelectorOpIn || len(f.Values) != 1 {
		return ""
	}
	return f.Values[0]
}

// ContainerLog is the end (at most n lines) of what a container of a Pod
// on this node wrote, from the kubelet's pod logs directory (podLogsDir,
// under the node's directory): a failed test's view of a workload whose
// logs the apiserver cannot fetch (it does not reach the kubelets' port).
func (n *Node) ContainerLog(namespace, pod, container string, lines int) string {
	pattern := filepath.Join(n.dir, "pod-logs", namespace+"_"+pod+"_*", container, "*.log")
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		return fmt.Sprintf("(no log at %s: %v)\n", pattern, err)
	}
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "--- %s %s %s ---\n%s", pod, container, filepath.Base(f), proc.Tail(f, lines))
	}
	return b.String()
}
