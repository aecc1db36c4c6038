package kubeapi

import (
	"context"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdlatest "k8s.io/client-go/tools/clientcmd/api/latest"
	"sigs.k8s.io/yaml"
)

// TestServer runs the loopback-only apiserver and round-trips the objects
// the controller reads. (Tests send traffic to loopback only, so the
// host-address mode, where the apiserver maintains default/kubernetes
// itself, is not exercised here.)
func TestServer(t *testing.T) {
	begin := time.Now()
	s := Start(t)
	t.Logf("start-up took %v", time.Since(begin))
	c := s.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if v, err := c.Discovery().ServerVersion(); err != nil {
		t.Fatalf("server version: %v", err)
	} else {
		t.Logf("server version %s", v.GitVersion)
	}

	const ns = "kubeapi-test"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}

	// A Node: created, then its status written through the status
	// subresource, as a kubelet would.
	node, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"kubernetes.io/hostname": "node-a"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node: %v", err)
	}
	node.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "127.0.0.2"},
		{Type: corev1.NodeHostName, Address: "node-a"},
	}
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
	}}
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update node status: %v", err)
	}

	svc, err := c.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeNodePort,
			Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{
				Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080),
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create service: %v", err)
	}
	if np := svc.Spec.Ports[0].NodePort; np < 30000 || np > 32767 {
		t.Errorf("nodePort %d not allocated from the default range", np)
	}
	if ip, err := netip.ParseAddr(svc.Spec.ClusterIP); err != nil || !netip.MustParsePrefix(serviceCIDR).Contains(ip) {
		t.Errorf("clusterIP %q not from %s", svc.Spec.ClusterIP, serviceCIDR)
	}

	ready := true
	port := int32(8080)
	proto := corev1.ProtocolTCP
	portName := "http"
	if _, err := c.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:   "web-abc12",
			Labels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "kubeapi-test"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			// Not loopback: the apiserver rejects 127.0.0.0/8 here.
			Addresses:  []string{"10.244.1.10"},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			NodeName:   &node.Name,
		}},
		Ports: []discoveryv1.EndpointPort{{Name: &portName, Protocol: &proto, Port: &port}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create endpointslice: %v", err)
	}

	// Read everything back.
	gotNode, err := c.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node: %v", err)
	}
	if a := gotNode.Status.Addresses; len(a) == 0 || a[0].Type != corev1.NodeInternalIP || a[0].Address != "127.0.0.2" {
		t.Errorf("node addresses = %+v", a)
	}
	if cs := gotNode.Status.Conditions; len(cs) != 1 || cs[0].Type != corev1.NodeReady || cs[0].Status != corev1.ConditionTrue {
		t.Errorf("node conditions = %+v", cs)
	}
	gotSvc, err := c.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get service: %v", err)
	}
	if gotSvc.Spec.Type != corev1.ServiceTypeNodePort || gotSvc.Spec.Ports[0].NodePort != svc.Spec.Ports[0].NodePort {
		t.Errorf("service = %+v", gotSvc.Spec)
	}
	slices, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=web",
	})
	if err != nil {
		t.Fatalf("list endpointslices: %v", err)
	}
	if len(slices.Items) != 1 || slices.Items[0].Endpoints[0].Addresses[0] != "10.244.1.10" ||
		*slices.Items[0].Endpoints[0].NodeName != "node-a" || *slices.Items[0].Ports[0].Port != 8080 {
		t.Errorf("endpointslices = %+v", slices.Items)
	}
}

// TestOutOfClusterFiles runs the default, loopback-only server and uses it
// the ways an out-of-cluster controller would.
func TestOutOfClusterFiles(t *testing.T) {
	s := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Loopback cannot be published: default/kubernetes has no endpoints.
	admin := s.Client(t)
	if _, err := admin.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err != nil {
		t.Errorf("default/kubernetes Service: %v", err)
	}
	if _, err := admin.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("default/kubernetes EndpointSlice: err = %v, want not found", err)
	}

	// TokenPath + CAPath + URL, as an out-of-cluster mode would use them.
	cfg := &rest.Config{Host: s.URL, BearerTokenFile: s.TokenPath, TLSClientConfig: rest.TLSClientConfig{CAFile: s.CAPath}}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("with token and CA files: %v", err)
	}

	// The kubeconfig.
	data, err := os.ReadFile(s.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := kruntime.Decode(clientcmdlatest.Codec, js)
	if err != nil {
		t.Fatalf("decode kubeconfig: %v", err)
	}
	kc := obj.(*clientcmdapi.Config)
	kctx := kc.Contexts[kc.CurrentContext]
	cluster, user := kc.Clusters[kctx.Cluster], kc.AuthInfos[kctx.AuthInfo]
	c, err = kubernetes.NewForConfig(&rest.Config{
		Host: cluster.Server, BearerToken: user.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cluster.CertificateAuthorityData},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("with kubeconfig: %v", err)
	}

	// RBAC is on: an unknown token is refused, anonymous is forbidden.
	bad, err := kubernetes.NewForConfig(s.ConfigForToken("not-a-token"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("unknown token: err = %v, want 401", err)
	}
	anon, err := kubernetes.NewForConfig(rest.AnonymousClientConfig(s.Config))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("anonymous: err = %v, want 403", err)
	}

	// Service-account tokens are issued and accepted.
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "reader"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "reader", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token request: %v", err)
	}
	sa, err := kubernetes.NewForConfig(s.ConfigForToken(tr.Status.Token))
	if err != nil {
		t.Fatal(err)
	}
	_, err = sa.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "system:serviceaccount:default:reader") {
		t.Errorf("service account without RBAC: err = %v, want 403 naming it", err)
	}

	// /readyz answers without credentials too (anonymous auth is on).
	hc := &http.Client{Transport: mustTransport(t, s)}
	resp, err := hc.Get(s.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("anonymous /readyz: %s", resp.Status)
	}
}

// mustTransport trusts the server's CA and sends no credentials.
func mustTransport(t *testing.T, s *Server) http.RoundTripper {
	t.Helper()
	rt, err := rest.TransportFor(rest.AnonymousClientConfig(s.Config))
	if err != nil {
		t.Fatal(err)
	}
	return rt
}
