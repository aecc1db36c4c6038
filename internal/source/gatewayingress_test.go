package source

import (
	"maps"
	"slices"
	"testing"

	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	gwfake "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned/fake"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

// The Secrets the Ingresses' TLS sections name follow the cache (from
// its index): added, changed, deleted, and the default certificate.
func TestIngressSecretsFollowTheCache(t *testing.T) {
	g := NewGateway(fake.NewClientset(), gwfake.NewSimpleClientset(), false, map[string]string{})
	g.WithIngress(gateway.Key{Namespace: "ns", Name: "default"})
	store := g.current().ing.ingresses.GetIndexer()
	ing := func(name string, secrets ...string) *netv1.Ingress {
		i := &netv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		for _, s := range secrets {
			i.Spec.TLS = append(i.Spec.TLS, netv1.IngressTLS{SecretName: s})
		}
		return i
	}
	names := func() []string {
		want := map[gateway.Key]bool{}
		g.ingressSecrets(want)
		var out []string
		for k := range maps.Keys(want) {
			out = append(out, k.String())
		}
		slices.Sort(out)
		return out
	}
	for _, step := range []struct {
		name string
		do   func() error
		want []string
	}{
		{"two Ingresses", func() error {
			if err := store.Add(ing("a", "s1", "s2")); err != nil {
				return err
			}
			return store.Add(ing("b", "s2", ""))
		}, []string{"ns/default", "ns/s1", "ns/s2"}},
		{"a changed", func() error { return store.Update(ing("a", "s3")) }, []string{"ns/default", "ns/s2", "ns/s3"}},
		{"b deleted", func() error { return store.Delete(ing("b")) }, []string{"ns/default", "ns/s3"}},
		{"a without TLS", func() error { return store.Update(ing("a")) }, []string{"ns/default"}},
	} {
		if err := step.do(); err != nil {
			t.Fatal(err)
		}
		if got := names(); !slices.Equal(got, step.want) {
			t.Fatalf("%s: %v, want %v", step.name, got, step.want)
		}
	}
}
