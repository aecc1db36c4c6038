package source

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/kubeclient"
)

// wireTypes records the media type of every apiserver answer by the
// resource its path names.
type wireTypes struct {
	mu   sync.Mutex
	seen map[string]map[string]bool // resource -> media types
}

func (w *wireTypes) RoundTrip(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(r)
		if err == nil {
			parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
			mt, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
			w.mu.Lock()
			res := parts[len(parts)-1]
			if w.seen[res] == nil {
				w.seen[res] = map[string]bool{}
			}
			w.seen[res][mt] = true
			w.mu.Unlock()
		}
		return resp, err
	})
}

func (w *wireTypes) of(res string) map[string]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[res]
}

// On a real apiserver, through run's client configuration (kubeclient):
// the built-in kinds the informers list and watch (Services,
// EndpointSlices, Nodes, Secrets) come as protobuf, which the apiserver
// encodes and the controller decodes for a fraction of JSON's cost (issue
// 29: the lists are most of a start at 10,000 Services); the Gateway API's
// custom resources, which have no protobuf encoding, as JSON, and a write
// through each clientset (a Service, a Gateway's status) still works.
// client-go's generated clients ask for protobuf only while the config
// names no content type: a ContentType set on the shared config would
// turn every list to JSON, or break every custom resource.
func TestWireFormats(t *testing.T) {
	kube := sharedAPIServer(t)
	ns := testNamespace(t, kube)
	cfg, err := kubeclient.Config(kubeclient.Options{Kubeconfig: kube.KubeconfigPath})
	if err != nil {
		t.Fatal(err)
	}
	wire := &wireTypes{seen: map[string]map[string]bool{}}
	cfg.Wrap(wire.RoundTrip)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := gwclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if _, err := client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create a Service: %v", err)
	}
	gw, err := gc.GatewayV1().Gateways(ns).Create(ctx, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "hks", Listeners: []gwv1.Listener{{Name: "l", Port: 80, Protocol: gwv1.TCPProtocolType}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a Gateway: %v", err)
	}
	gw.Status.Addresses = []gwv1.GatewayStatusAddress{{Value: "192.0.2.1"}}
	if _, err := gc.GatewayV1().Gateways(ns).UpdateStatus(ctx, gw, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("write a Gateway's status: %v", err)
	}

	if err := New(client, "").Start(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := NewGateway(client, gc, false, map[string]string{gateway.KindHTTPRoute: RouteV1}).Start(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	const proto, json = "application/vnd.kubernetes.protobuf", "application/json"
	for _, c := range []struct {
		resource, want string
	}{
		{"services", proto}, {"endpointslices", proto}, {"nodes", proto}, {"secrets", proto},
		{"gateways", json}, {"httproutes", json}, {"status", json},
	} {
		got := wire.of(c.resource)
		if len(got) != 1 || !got[c.want] {
			t.Errorf("%s answered as %v, want only %s", c.resource, keys(got), c.want)
		}
	}
}
