package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// The gateway source reads every certificate from its informer's cache:
// a Secret named at start, one named later and a rotation are served
// with no GET of a Secret (the client here fails every one, as the
// shipped role would); a bad one carries why.
func TestGatewaySecretsFromCache(t *testing.T) {
	kube := sharedAPIServer(t)
	ns := testNamespace(t, kube)
	var gets atomic.Int32
	cfg := rest.CopyConfig(kube.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/secrets/") {
				gets.Add(1)
				return nil, errors.New("GET of a Secret: refused by the test")
			}
			return rt.RoundTrip(r)
		})
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := gwclient.NewForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	root := testcert.CA(t, "root")
	tlsData := func(name string, keyOf *testcert.Cert) (map[string][]byte, testcert.Cert) {
		c := testcert.Issue(t, testcert.Spec{DNS: []string{name}}, root)
		key := c.KeyPEM(t)
		if keyOf != nil {
			key = keyOf.KeyPEM(t)
		}
		return map[string][]byte{corev1.TLSCertKey: c.PEM(), corev1.TLSPrivateKeyKey: key}, c
	}
	secret := func(name string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS, Data: data}
	}
	named, _ := tlsData("named.example", nil)
	other, _ := tlsData("other.example", nil)
	_, stranger := tlsData("x.example", nil)
	bad, _ := tlsData("bad.example", &stranger)
	for name, d := range map[string]map[string][]byte{"named": named, "other": other, "bad": bad} {
		if _, err := client.CoreV1().Secrets(ns).Create(ctx, secret(name, d), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	listener := func(refs ...string) gwv1.Listener {
		l := gwv1.Listener{Name: "https", Protocol: gwv1.HTTPSProtocolType, Port: 443, TLS: &gwv1.ListenerTLSConfig{}}
		for _, r := range refs {
			l.TLS.CertificateRefs = append(l.TLS.CertificateRefs, gwv1.SecretObjectReference{Name: gwv1.ObjectName(r)})
		}
		return l
	}
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "hks", Listeners: []gwv1.Listener{listener("named", "bad")}}}
	if gw, err = gc.GatewayV1().Gateways(ns).Create(ctx, gw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	src := NewGateway(client, gc, false, map[string]string{})
	sctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	if err := src.Start(sctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	secrets := func() map[string]*gateway.Secret {
		out := map[string]*gateway.Secret{}
		for _, s := range src.Snapshot().Secrets {
			out[s.Name] = s
		}
		return out
	}
	// until polls Snapshot until check passes.
	until := func(what string, check func(map[string]*gateway.Secret) error) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			err := check(secrets())
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	holds := func(s *gateway.Secret, data map[string][]byte) error {
		if s == nil || !s.ValidTLS || s.Bundle == nil {
			return fmt.Errorf("no bundle: %+v", s)
		}
		want, err := certs.Parse(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey], time.Now())
		if err != nil || !bytes.Equal(want.PEM, s.Bundle.PEM) {
			return fmt.Errorf("bundle is not the Secret's (%v)", err)
		}
		return nil
	}
	until("named Secrets kept", func(m map[string]*gateway.Secret) error {
		switch {
		case holds(m["named"], named) != nil:
			return holds(m["named"], named)
		case holds(m["other"], other) != nil:
			return fmt.Errorf("a Secret no listener names yet: %v", holds(m["other"], other))
		case m["bad"] == nil || m["bad"].ValidTLS || !strings.Contains(m["bad"].Problem, "key does not belong"):
			return fmt.Errorf("a bad Secret: %+v", m["bad"])
		}
		return nil
	})

	// Named later: from the cache, then its updates.
	gw.Spec.Listeners = []gwv1.Listener{listener("named", "other")}
	if _, err := gc.GatewayV1().Gateways(ns).Update(ctx, gw, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	until("a Secret named later", func(m map[string]*gateway.Secret) error { return holds(m["other"], other) })
	rotated, _ := tlsData("other.example", nil)
	if _, err := client.CoreV1().Secrets(ns).Update(ctx, secret("other", rotated), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	until("a rotation", func(m map[string]*gateway.Secret) error { return holds(m["other"], rotated) })
	if n := gets.Load(); n != 0 {
		t.Errorf("%d GETs of a Secret, want none", n)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
