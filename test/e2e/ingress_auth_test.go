package e2e

import (
	"crypto/sha1" //nolint:gosec // htpasswd's {SHA} entries
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// shaEntry is an htpasswd {SHA} line (htpasswd -s).
func shaEntry(user, pass string) string {
	sum := sha1.Sum([]byte(pass)) //nolint:gosec // see the import
	return user + ":{SHA}" + base64.StdEncoding.EncodeToString(sum[:]) + "\n"
}

// getAuth sends GET / with Host host to serviceIP():port, with Basic
// credentials unless user is "", and returns the status and the
// WWW-Authenticate header.
func getAuth(port int, host, user, pass string) (int, string, error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{Timeout: 3 * time.Second}).DialContext}, Timeout: 3 * time.Second}
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://%s:%d/", serviceIP(), port), nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), nil
}

// TestIngressBasicAuth: ingress-nginx's auth-type: basic with
// auth-secret and auth-realm, and HAProxy Ingress's auth-secret, on real
// HAProxy: a request without credentials, with a wrong password or an
// unknown user gets 401 and the realm; a user of the Secret's htpasswd
// file ({SHA}, a password with a colon; {PLAIN}) reaches the Pod. Users
// added and removed in the Secret, authentication added to and removed
// from an Ingress on a running controller: 0 reloads. A Secret of apr1
// entries: an InvalidAuthSecret Event naming the format, and nobody is
// admitted (fails closed).
func TestIngressBasicAuth(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	ing, httpPort := g.ing, g.httpPort
	secrets := g.client.CoreV1().Secrets(ns)
	g.web("web", 0)
	n, hp := ingress.NginxPrefix, ingress.HAProxyPrefix
	secret := func(name, file string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{ingress.AuthKey: []byte(file)}}
	}
	if _, err := secrets.Create(bg, secret("users", shaEntry("alice", "wonder:land")+"bob:{PLAIN}builder\n"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Create(bg, secret("old-users", "dave:$apr1$Ab1cD2eF$0123456789abcdefghijk.\n"+shaEntry("erin", "e")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	admin := map[string]string{n + "auth-type": "basic", n + "auth-secret": "users", n + "auth-realm": "Admin area - staff only"}
	for _, i := range []*netv1.Ingress{
		ingressOf("base", "base.example.com", nil, prefix("/", "web")),
		ingressOf("admin", "admin.example.com", admin, prefix("/", "web")),
	} {
		if _, err := ing.Ingresses(ns).Create(bg, i, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	g.start()
	as := func(host, user, pass string, want int) func() error {
		return func() error {
			code, challenge, err := getAuth(httpPort, host, user, pass)
			if err != nil {
				return fmt.Errorf("GET %s as %q: %w", host, user, err)
			}
			if code != want {
				return fmt.Errorf("GET %s as %q: %d, want %d", host, user, code, want)
			}
			if want == http.StatusUnauthorized && host == "admin.example.com" && challenge != `Basic realm="Admin area - staff only"` {
				return fmt.Errorf("GET %s as %q: WWW-Authenticate %q", host, user, challenge)
			}
			return nil
		}
	}
	g.eventually("the base Ingress serves", as("base.example.com", "", "", 200))
	g.eventually("admin asks for a password", as("admin.example.com", "", "", 401))
	checkAll(t,
		as("admin.example.com", "alice", "wonder:land", 200),
		as("admin.example.com", "bob", "builder", 200),
		as("admin.example.com", "alice", "wonder", 401),
		as("admin.example.com", "alice", "builder", 401),
		as("admin.example.com", "mallory", "wonder:land", 401),
		as("base.example.com", "", "", 200),
	)
	before := g.reloads()
	s, err := secrets.Get(bg, "users", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data[ingress.AuthKey] = []byte(shaEntry("alice", "wonder:land") + shaEntry("carol", "c4rol"))
	if _, err := secrets.Update(bg, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.eventually("a user added", as("admin.example.com", "carol", "c4rol", 200))
	g.eventually("a user removed", as("admin.example.com", "bob", "builder", 401))
	updateIngress(t, ing.Ingresses(ns), "base", func(mod *netv1.Ingress) {
		mod.Annotations = map[string]string{hp + "auth-secret": "users"}
	})
	g.eventually("authentication added (HAProxy Ingress's key)", as("base.example.com", "", "", 401))
	checkAll(t, as("base.example.com", "carol", "c4rol", 200))
	updateIngress(t, ing.Ingresses(ns), "base", func(mod *netv1.Ingress) {
		mod.Annotations = map[string]string{hp + "auth-secret": "old-users"}
	})
	g.eventually("an apr1 entry reported", g.ingressEvent("base", "InvalidAuthSecret", "apr1"))
	// carol is a user of the Secret named before, not of this one.
	g.eventually("a Secret with an apr1 entry admits nobody", as("base.example.com", "carol", "c4rol", 401))
	checkAll(t, as("base.example.com", "erin", "e", 401), as("admin.example.com", "carol", "c4rol", 200))
	updateIngress(t, ing.Ingresses(ns), "admin", func(mod *netv1.Ingress) { mod.Annotations = nil })
	g.eventually("authentication removed", as("admin.example.com", "", "", 200))
	if r := g.reloads(); r != before {
		t.Errorf("users and authentication added, changed and removed reloaded HAProxy %d times, want 0", r-before)
	}
}
