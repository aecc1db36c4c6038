package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/gwcrd"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// newHTTPGatewayEnv is newGatewayEnv with every Gateway API CRD,
// HTTPRoute's included.
func newHTTPGatewayEnv(t *testing.T) *gwEnv {
	e := newEnv(t)
	gwcrd.InstallAll(t, e.kube.Config)
	return newGatewayEnvOn(t, e)
}

// mtlsGet sends one HTTPS request for host through port, presenting
// client (nil: no certificate; the certificate is sent whatever CA names
// the server asks for, as the conformance suite does), trusting the
// server's self-signed leaf: the status and body, or the error.
func mtlsGet(port int, host string, server *x509.Certificate, client *tls.Certificate) (int, string, error) {
	code, body, _, err := mtlsAsked(port, host, server, client)
	return code, body, err
}

// mtlsAsked is mtlsGet, also saying whether the server asked for a
// client certificate.
func mtlsAsked(port int, host string, server *x509.Certificate, client *tls.Certificate) (int, string, bool, error) {
	var asked atomic.Bool
	resp, err := mtlsClient(port, host, server, client, &asked).Get("https://" + host + "/")
	if err != nil {
		return 0, "", asked.Load(), err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), asked.Load(), nil
}

// mtlsClient is an HTTP client for host over TLS to serviceIP():port
// (every connection there, the URL naming the host), trusting server,
// presenting client (nil: none) when asked, which it notes in asked.
func mtlsClient(port int, host string, server *x509.Certificate, client *tls.Certificate, asked *atomic.Bool) *http.Client {
	roots := x509.NewCertPool()
	roots.AddCert(server)
	cfg := &tls.Config{ServerName: host, RootCAs: roots, MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			asked.Store(true)
			if client == nil {
				return &tls.Certificate{}, nil
			}
			return client, nil
		}}
	addr := fmt.Sprintf("%s:%d", serviceIP(), port)
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true, DialContext: dial}}
}

// mtlsFixture: a server certificate (the Secret "server", for hosts),
// a client CA (the ConfigMap "client-ca") and another CA, and a client
// certificate of each.
type mtlsFixture struct {
	server            *x509.Certificate
	clientCA, otherCA testcert.Cert
	known, unknown    *tls.Certificate
	caMap             *corev1.ConfigMap
}

// serverSecret creates the TLS Secret name of a server certificate for
// hosts and returns the certificate.
func serverSecret(t *testing.T, g *gwEnv, name string, hosts ...string) *x509.Certificate {
	t.Helper()
	secret := tlsSecret(t, name, hosts...) // ingress_test.go
	block, _ := pem.Decode(secret.Data[corev1.TLSCertKey])
	if block == nil {
		t.Fatal("the server certificate is no PEM")
	}
	server, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.client.CoreV1().Secrets(ns).Create(bg, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return server
}

func newMTLSFixture(t *testing.T, g *gwEnv, hosts ...string) mtlsFixture {
	t.Helper()
	m := mtlsFixture{server: serverSecret(t, g, "server", hosts...), clientCA: testcert.CA(t, "client CA"), otherCA: testcert.CA(t, "unknown CA")}
	pair := func(ca testcert.Cert) *tls.Certificate {
		c := testcert.Issue(t, testcert.Spec{CN: "client", Client: true}, ca)
		p, err := tls.X509KeyPair(c.PEM(), c.KeyPEM(t))
		if err != nil {
			t.Fatal(err)
		}
		return &p
	}
	m.known, m.unknown = pair(m.clientCA), pair(m.otherCA)
	m.caMap = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "client-ca", Namespace: ns}, Data: map[string]string{gateway.CAKey: string(m.clientCA.PEM())}}
	if _, err := g.client.CoreV1().ConfigMaps(ns).Create(bg, m.caMap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGatewayFrontendClientCertificates: an HTTPS listener of a Gateway
// whose spec.tls.frontend names a CA (a ConfigMap) serves a client whose
// certificate that CA signed and refuses, in the handshake, one with an
// unknown certificate or none; the ConfigMap changed to another CA and
// back, the new CA is verified against with no reload; the ConfigMap deleted, the last valid CA
// is still verified against (ResolvedRefs False says so); switched to
// AllowInsecureFallback, every client is let through and the Gateway
// carries InsecureFrontendValidationMode.
func TestGatewayFrontendClientCertificates(t *testing.T) {
	if !inNetns(t, podAddrs...) {
		return
	}
	g := newHTTPGatewayEnv(t)
	g.httpPod("web-a", 1, 8080)
	port := haproxytest.FreePort(t)

	m := newMTLSFixture(t, g, "a.example.com")
	server, clientCA, otherCA, known, unknown, caMap := m.server, m.clientCA, m.otherCA, m.known, m.unknown, m.caMap
	https := listener("https", gwv1.HTTPSProtocolType, port, "")
	https.TLS = &gwv1.ListenerTLSConfig{CertificateRefs: []gwv1.SecretObjectReference{{Name: "server"}}}
	_, err := g.gw.GatewayV1().Gateways(ns).Create(bg, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "hks", Listeners: []gwv1.Listener{https},
			TLS: &gwv1.GatewayTLSConfig{Frontend: &gwv1.FrontendTLSConfig{Default: gwv1.TLSConfig{Validation: &gwv1.FrontendTLSValidation{
				CACertificateRefs: []gwv1.ObjectReference{{Kind: "ConfigMap", Name: "client-ca"}}}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g.httpRoute("a", "https", "a.example.com", backendRef("web-a", 1))
	g.startController("--mode=gateway")
	g.eventually("route accepted", g.routeAccepted(gateway.KindHTTPRoute, "a"))

	// served: the client with client's certificate is answered by web-a,
	// three times in a row.
	served := func(client *tls.Certificate) func() error {
		return func() error {
			for range 3 {
				code, body, err := mtlsGet(port, "a.example.com", server, client)
				if err != nil || code != http.StatusOK || body != "web-a" {
					return fmt.Errorf("answer %d %q, error %v; want 200 from web-a", code, body, err)
				}
			}
			return nil
		}
	}
	// refused: the handshake fails three times in a row (the request
	// never reaches HTTP).
	refused := func(what string, client *tls.Certificate) {
		t.Helper()
		for i := range 3 {
			if code, body, err := mtlsGet(port, "a.example.com", server, client); err == nil {
				t.Fatalf("%s: request %d answered %d %q, want the handshake refused", what, i, code, body)
			}
		}
	}
	g.eventually("the known client served", served(known))
	refused("an unknown client certificate", unknown)
	refused("no client certificate", nil)

	// The CA's ConfigMap changed to another CA and back: committed
	// through the Runtime API, no reload (issue 34).
	reloads := g.reloads()
	setCA := func(ca testcert.Cert) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cm, err := g.client.CoreV1().ConfigMaps(ns).Get(bg, "client-ca", metav1.GetOptions{})
			if err != nil {
				return err
			}
			cm.Data[gateway.CAKey] = string(ca.PEM())
			_, err = g.client.CoreV1().ConfigMaps(ns).Update(bg, cm, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setCA(otherCA)
	g.eventually("the other CA's client served", served(unknown))
	refused("the first CA's client, after the change", known)
	setCA(clientCA)
	g.eventually("the known client served again", served(known))
	refused("the other CA's client, after the change back", unknown)
	if n := g.reloads() - reloads; n != 0 {
		t.Errorf("%d reloads for two changes of the CA, want 0", n)
	}

	listenerCond := func(typ string) string {
		gw, err := g.gw.GatewayV1().Gateways(ns).Get(bg, "gw", metav1.GetOptions{})
		if err != nil || len(gw.Status.Listeners) == 0 {
			return fmt.Sprintf("no listener status (%v)", err)
		}
		for _, c := range gw.Status.Listeners[0].Conditions {
			if c.Type == typ {
				return string(c.Status) + "/" + c.Reason
			}
		}
		return "missing"
	}
	// The CA's ConfigMap deleted: the last valid CA is still verified
	// against, and the listener says its refs do not resolve.
	if err := g.client.CoreV1().ConfigMaps(ns).Delete(bg, "client-ca", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	g.eventually("ResolvedRefs False", func() error {
		if got := listenerCond("ResolvedRefs"); got != "False/InvalidCACertificateRef" {
			return fmt.Errorf("listener ResolvedRefs %s", got)
		}
		return nil
	})
	g.eventually("the known client still served", served(known))
	refused("an unknown client certificate, CA deleted", unknown)

	// AllowInsecureFallback: every client is let through.
	if _, err := g.client.CoreV1().ConfigMaps(ns).Create(bg, caMap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		gw, err := g.gw.GatewayV1().Gateways(ns).Get(bg, "gw", metav1.GetOptions{})
		if err != nil {
			return err
		}
		gw.Spec.TLS.Frontend.Default.Validation.Mode = gwv1.AllowInsecureFallback
		_, err = g.gw.GatewayV1().Gateways(ns).Update(bg, gw, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	g.eventually("an unknown client certificate let through", served(unknown))
	g.eventually("no client certificate let through", served(nil))
	g.eventually("the known client served", served(known))
	g.eventually("InsecureFrontendValidationMode", func() error {
		gw, err := g.gw.GatewayV1().Gateways(ns).Get(bg, "gw", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range gw.Status.Conditions {
			if c.Type == string(gwv1.GatewayConditionInsecureFrontendValidationMode) && c.Status == metav1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", gw.Status.Conditions)
	})
}
