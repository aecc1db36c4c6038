package e2e

import (
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	networkingclient "k8s.io/client-go/kubernetes/typed/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// ingressEnv is the world every Ingress test opens with: its own network
// namespace holding podAddrs, a gateway environment (a real apiserver,
// HAProxy), a free port for the Ingresses' HTTP frontend and our
// IngressClass "hks".
type ingressEnv struct {
	*gwEnv
	ing      networkingclient.NetworkingV1Interface
	httpPort int
}

// newIngressEnv opens an Ingress test; ok is false when the caller
// returns (the test ran again in its own network namespace, inNetns).
func newIngressEnv(t *testing.T) (g *ingressEnv, ok bool) {
	t.Helper()
	if !inNetns(t, podAddrs...) {
		return nil, false
	}
	gw := newGatewayEnv(t)
	g = &ingressEnv{gwEnv: gw, ing: gw.client.NetworkingV1(), httpPort: haproxytest.FreePort(t)}
	createIngressClass(t, g.ing)
	return g, true
}

// web starts an httpPod name at podAddrs[i]:8080 and its Service (port 80).
func (g *ingressEnv) web(name string, i int) {
	g.t.Helper()
	httpPod(g.t, name, podAddrs[i], 8080)
	g.httpService(name, podAddrs[i])
}

// create creates the Ingresses.
func (g *ingressEnv) create(ings ...*netv1.Ingress) {
	g.t.Helper()
	for _, i := range ings {
		if _, err := g.ing.Ingresses(ns).Create(bg, i, metav1.CreateOptions{}); err != nil {
			g.t.Fatal(err)
		}
	}
}

// start runs the controller in the gateway mode serving IngressClass hks
// on httpPort, with exactly the shipped roles (deploy/gateway/rbac.yaml
// and ingress-rbac.yaml), and extra flags.
func (g *ingressEnv) start(extra ...string) {
	g.t.Helper()
	args := []string{"--mode=gateway", "--kubeconfig", "", "--api-server", g.kube.URL, "--ca-file", g.kube.CAPath,
		"--token-file", g.rbacTokenFileFrom("../../deploy/gateway/rbac.yaml", "../../deploy/gateway/ingress-rbac.yaml"),
		"--ingress-class=hks", fmt.Sprintf("--ingress-http-port=%d", g.httpPort)}
	g.startController(append(args, extra...)...)
}

// serve serves h at podAddrs[i]:8080 and makes it the endpoint of
// Service name (port 80), as web does for its echo.
func (g *ingressEnv) serve(name string, i int, h http.HandlerFunc) {
	g.t.Helper()
	servePod(g.t, podAddrs[i], 8080, h) // ingress_retry_test.go
	g.httpService(name, podAddrs[i])
}

// mTLS is the mutual TLS fixture for hosts (gateway_mtls_test.go: the
// Secret "server") with its client CA in the Secret "clients-ca" the
// Ingresses' auth-tls-secret names.
func (g *ingressEnv) mTLS(hosts ...string) mtlsFixture {
	g.t.Helper()
	m := newMTLSFixture(g.t, g.gwEnv, hosts...)
	ca := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "clients-ca", Namespace: ns}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{ingress.CAKey: m.clientCA.PEM()}}
	if _, err := g.client.CoreV1().Secrets(ns).Create(bg, ca, metav1.CreateOptions{}); err != nil {
		g.t.Fatal(err)
	}
	return m
}

// leaderFlags make the controller elect a leader, as shipped.
var leaderFlags = []string{"--leader-elect", "--leader-election-namespace", "haproxy-k8s-sync", "--leader-election-name", "haproxy-k8s-sync-gateway"}
