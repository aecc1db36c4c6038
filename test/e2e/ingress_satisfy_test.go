package e2e

import (
	"fmt"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// getAuthFrom is getAuth (ingress_auth_test.go) from address src: the
// status only.
func getAuthFrom(src string, port int, host, user, pass string) (int, error) {
	return getEdited(src, port, host, "/", func(r *http.Request) { // ingress_globallimit_test.go
		if user != "" {
			r.SetBasicAuth(user, pass)
		}
	})
}

// TestIngressSatisfy: ingress-nginx's satisfy on real HAProxy and a real
// Pod, an Ingress with an allow list and basic authentication: by
// default (all) a source in the list without credentials gets 401 and
// one outside it with them 403; with satisfy: any, the source in the
// list is served without credentials, the one outside it is asked (401)
// and served with them, and a denied source too; a value that is not any
// or all: an Event, the last good version kept. 0 reloads.
func TestIngressSatisfy(t *testing.T) {
	g, ok := newIngressEnv(t)
	if !ok {
		return
	}
	secrets := g.client.CoreV1().Secrets(ns)
	g.web("web", 0)
	if _, err := secrets.Create(bg, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "users", Namespace: ns}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{ingress.AuthKey: []byte(shaEntry("alice", "wonder"))}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n := ingress.NginxPrefix
	const host = "office.example.com"
	ann := func(satisfy string) map[string]string {
		a := map[string]string{n + "auth-type": "basic", n + "auth-secret": "users",
			n + "allowlist-source-range": "127.0.0.30/32, 127.0.0.1/32", n + "denylist-source-range": "127.0.0.32/32"}
		if satisfy != "" {
			a[n+"satisfy"] = satisfy
		}
		return a
	}
	g.create(ingressOf("office", host, ann(""), prefix("/", "web")))
	g.start()
	as := func(src, user, pass string, want int) func() error {
		return func() error {
			code, err := getAuthFrom(src, g.httpPort, host, user, pass)
			if err != nil {
				return fmt.Errorf("GET from %s as %q: %w", src, user, err)
			}
			if code != want {
				return fmt.Errorf("GET from %s as %q: %d, want %d", src, user, code, want)
			}
			return nil
		}
	}
	check := func(what string, conds ...func() error) {
		t.Helper()
		for _, c := range conds {
			if err := c(); err != nil {
				t.Errorf("%s: %v", what, err)
			}
		}
	}
	g.eventually("the Ingress asks for credentials", as("127.0.0.30", "", "", 401))
	before := g.reloads()
	all := []func() error{
		as("127.0.0.30", "", "", 401), as("127.0.0.30", "alice", "wonder", 200),
		as("127.0.0.31", "alice", "wonder", 403), as("127.0.0.31", "", "", 403), as("127.0.0.32", "alice", "wonder", 403),
	}
	check("satisfy all (the default)", all...)
	set := func(satisfy string) {
		updateIngress(t, g.ing.Ingresses(ns), "office", func(o *netv1.Ingress) { o.Annotations = ann(satisfy) })
	}
	set("any")
	g.eventually("satisfy any: the listed source served without credentials", as("127.0.0.30", "", "", 200))
	anyOf := []func() error{
		as("127.0.0.30", "", "", 200), as("127.0.0.30", "alice", "bad", 200),
		as("127.0.0.31", "", "", 401), as("127.0.0.31", "alice", "bad", 401), as("127.0.0.31", "alice", "wonder", 200),
		as("127.0.0.32", "", "", 401), as("127.0.0.32", "alice", "wonder", 200),
	}
	check("satisfy any", anyOf...)
	set("some")
	g.eventually("an Event refuses a value that is not any or all", g.ingressEvent("office", "Refused", "is not any or all"))
	check("the last good version (any)", anyOf...)
	set("all")
	g.eventually("satisfy all again", as("127.0.0.30", "", "", 401))
	check("satisfy all", all...)
	if r := g.reloads(); r != before {
		t.Errorf("satisfy set, changed and removed reloaded HAProxy %d times, want 0", r-before)
	}
}
