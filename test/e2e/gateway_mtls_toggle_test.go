package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// TestGatewayClientValidationToggles: AllowValidOnly turned on and off
// on one HTTPS listener's port (spec.tls.frontend.perPort) while clients
// keep sending requests to it and to another HTTPS listener: no reload
// (but in tproxy mode with the HTTP listener: validationToggleReloads);
// while on, an unknown client certificate and none are refused in the
// handshake and the CA's client served; the other listener's clients are
// never asked for a certificate and never fail (issue 34: the
// verification is on the crt-list lines, render/clientauth.go). The CA's
// clients of the listener itself may fail while validation turns on (a
// handshake begun on the line that did not ask, its session checked
// after the map names the port): counted and logged, not failed on.
func TestGatewayClientValidationToggles(t *testing.T) {
	testValidationToggles(t, false, validationToggleReloads())
}

// TestGatewayClientValidationTogglesOwnSecret is
// TestGatewayClientValidationToggles with a Secret per listener, each
// naming its own host: no reload in either listener mode (behind the
// fixed HTTPS listener, listener a's lines verify on their own:
// docs/listeners.md, "Client validation behind the fixed listener").
func TestGatewayClientValidationTogglesOwnSecret(t *testing.T) {
	testValidationToggles(t, true, 0)
}

// testValidationToggles is the toggle test, listener b with a Secret of
// its own (ownSecret) or the one of listener a, naming both hosts, and
// the reloads it expects.
func testValidationToggles(t *testing.T, ownSecret bool, wantReloads int) {
	if !inNetns(t, podAddrs...) {
		return
	}
	g := newHTTPGatewayEnv(t)
	g.httpPod("web-a", 1, 8080)
	port, otherPort := haproxytest.FreePort(t), haproxytest.FreePort(t)
	hosts := []string{"a.example.com", "b.example.com"}
	if ownSecret {
		hosts = hosts[:1]
	}
	m := newMTLSFixture(t, g, hosts...) // gateway_mtls_test.go
	server, serverB, known, unknown := m.server, m.server, m.known, m.unknown
	refs := &gwv1.ListenerTLSConfig{CertificateRefs: []gwv1.SecretObjectReference{{Name: "server"}}}
	a, b := listener("a", gwv1.HTTPSProtocolType, port, "a.example.com"), listener("b", gwv1.HTTPSProtocolType, otherPort, "b.example.com")
	a.TLS, b.TLS = refs, refs
	if ownSecret {
		serverB = serverSecret(t, g, "server-b", "b.example.com") // gateway_mtls_test.go
		b.TLS = &gwv1.ListenerTLSConfig{CertificateRefs: []gwv1.SecretObjectReference{{Name: "server-b"}}}
	}
	serverOf := func(p int) *x509.Certificate {
		if p == otherPort {
			return serverB
		}
		return server
	}
	_, err := g.gw.GatewayV1().Gateways(ns).Create(bg, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "hks", Listeners: []gwv1.Listener{a, b}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g.httpRoute("a", "a", "a.example.com", backendRef("web-a", 1))
	g.httpRoute("b", "b", "b.example.com", backendRef("web-a", 1))
	g.startController("--mode=gateway")
	g.eventually("route b accepted", g.routeAccepted(gateway.KindHTTPRoute, "b"))
	// answers: client is answered by web-a through p, three times in a
	// row; asked says whether it must have been asked for a certificate.
	answers := func(p int, host string, client *tls.Certificate, asked bool) func() error {
		return func() error {
			for range 3 {
				code, body, was, err := mtlsAsked(p, host, serverOf(p), client)
				if err != nil || code != http.StatusOK || body != "web-a" || was != asked {
					return fmt.Errorf("answer %d %q, asked %v, error %v; want 200 from web-a, asked %v", code, body, was, err, asked)
				}
			}
			return nil
		}
	}
	refused := func(client *tls.Certificate) func() error {
		return func() error {
			for range 3 {
				if code, _, _, err := mtlsAsked(port, "a.example.com", server, client); err == nil {
					return fmt.Errorf("answered %d, want the handshake refused", code)
				}
			}
			return nil
		}
	}
	g.eventually("listener a serves", answers(port, "a.example.com", known, false))
	g.eventually("listener b serves", answers(otherPort, "b.example.com", nil, false))

	// Load: clients of listener b, without a certificate, and clients
	// of listener a with the CA's, until the end.
	var sent, failed, failedA, askedB atomic.Int64
	var firstFail, firstFailA atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, host, client := otherPort, "b.example.com", (*tls.Certificate)(nil)
			if i%2 == 1 {
				p, host, client = port, "a.example.com", known
			}
			for n := 0; n < 100000; n++ { // bounded; stopped long before
				select {
				case <-stop:
					return
				default:
				}
				code, _, asked, err := mtlsAsked(p, host, serverOf(p), client)
				sent.Add(1)
				switch {
				case (err != nil || code != http.StatusOK) && p == port:
					failedA.Add(1) // a handshake that straddled the switch (docs/gateway.md)
					firstFailA.CompareAndSwap(nil, fmt.Sprintf("%s: %d %v", host, code, err))
				case err != nil || code != http.StatusOK:
					failed.Add(1)
					firstFail.CompareAndSwap(nil, fmt.Sprintf("%s: %d %v", host, code, err))
				}
				if asked && p == otherPort {
					askedB.Add(1)
				}
			}
		}()
	}
	reloads := g.reloads()
	setValidation := func(on bool) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			gw, err := g.gw.GatewayV1().Gateways(ns).Get(bg, "gw", metav1.GetOptions{})
			if err != nil {
				return err
			}
			gw.Spec.TLS = nil
			if on {
				gw.Spec.TLS = &gwv1.GatewayTLSConfig{Frontend: &gwv1.FrontendTLSConfig{PerPort: []gwv1.TLSPortConfig{{
					Port: gwv1.PortNumber(port), TLS: gwv1.TLSConfig{Validation: &gwv1.FrontendTLSValidation{
						CACertificateRefs: []gwv1.ObjectReference{{Kind: "ConfigMap", Name: "client-ca"}}}}}}}}
			}
			_, err = g.gw.GatewayV1().Gateways(ns).Update(bg, gw, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		setValidation(true)
		g.eventually(fmt.Sprint("on ", i, ": no certificate refused"), refused(nil))
		g.eventually(fmt.Sprint("on ", i, ": an unknown certificate refused"), refused(unknown))
		g.eventually(fmt.Sprint("on ", i, ": the CA's client served"), answers(port, "a.example.com", known, true))
		setValidation(false)
		g.eventually(fmt.Sprint("off ", i, ": no certificate served"), answers(port, "a.example.com", nil, false))
	}
	close(stop)
	wg.Wait()
	if n := g.reloads() - reloads; n != wantReloads {
		t.Errorf("%d reloads turning validation on and off twice, want %d", n, wantReloads)
	}
	t.Logf("%d requests under load; listener b: %d failed, %d asked; listener a (the CA's client): %d failed (first: %v)",
		sent.Load(), failed.Load(), askedB.Load(), failedA.Load(), firstFailA.Load())
	if failed.Load() > 0 || askedB.Load() > 0 {
		t.Errorf("listener b: %d of %d requests failed (first: %v), %d clients asked for a certificate; want 0",
			failed.Load(), sent.Load(), firstFail.Load(), askedB.Load())
	}
}

// validationToggleReloads is how many reloads turning validation on and
// off twice costs: 0 where the listener keeps its own frontend (ports
// mode, or tproxy mode without the HTTP listener: the verification is
// on its crt-list lines). In tproxy mode with the HTTP listener on, both
// listeners are behind the fixed HTTPS listener, and the one Secret
// serves both's names: a line verifying for listener a would serve b's
// names too (the server name chooses the line, whatever the port), so a
// verifying listener a clashes with b there (render.ListenerCertName)
// and moves to a frontend of its own and back: one reload each way, 4,
// and listener a's clients are refused for ~70-170 ms of each reload
// (docs/listeners.md, "The move made before it breaks"; counted in failedA,
// not failed on); b keeps the listener and never fails. With a Secret
// of its own, a verifying listener stays behind the fixed listener and
// turns with no reload (internal/driver/tproxy
// TestHTTPSListenerClientValidation). docs/listeners.md ("Client
// validation in tproxy mode").
func validationToggleReloads() int {
	if tproxyMode() && httpListenerOn() {
		return 4
	}
	return 0
}
