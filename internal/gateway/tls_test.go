package gateway

import (
	"maps"
	"slices"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// tlsSecret is a Secret as the source keeps a referenced one: valid, with
// its bundle for names.
func tlsSecret(t *testing.T, ns, name string, names ...string) *Secret {
	t.Helper()
	c := testcert.Issue(t, testcert.Spec{DNS: names}, testcert.Cert{})
	b, err := certs.Parse(c.PEM(), c.KeyPEM(t), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return &Secret{ObjectMeta: meta(ns, name, 0), ValidTLS: true, Bundle: &b}
}

// terminations computes in and returns each HTTPS listener's termination
// as "default: name=SNIs..." with the listener's ResolvedRefs.
func terminations(in Input, memo *CertMemo) map[string]*model.TLS {
	out := map[string]*model.TLS{}
	memo.begin()
	defer memo.end()
	w := newWorld(in)
	for _, g := range in.Gateways {
		for _, l := range listenersOf(g, false) {
			w.certRefs(g, l)
			if t := w.listenerTLS(g, l, memo); t != nil {
				out[string(l.spec.Name)] = t
			}
		}
	}
	return out
}

func certNames(t *model.TLS) []string {
	if t == nil {
		return nil
	}
	var out []string
	for _, c := range t.Certificates {
		out = append(out, c.Name)
	}
	return out
}

func TestListenerTLS(t *testing.T) {
	a := tlsSecret(t, "apps", "a", "a.example", "*.a.example")
	b := tlsSecret(t, "apps", "b", "b.example")
	other := tlsSecret(t, "certs", "c", "c.example")
	bad := &Secret{ObjectMeta: meta("apps", "a", 0), Problem: "the key does not belong to the certificate"}
	grant := &gwv1beta1.ReferenceGrant{ObjectMeta: meta("certs", "g", 0), Spec: gwv1beta1.ReferenceGrantSpec{
		From: []gwv1beta1.ReferenceGrantFrom{{Group: gwv1.GroupName, Kind: "Gateway", Namespace: "apps"}},
		To:   []gwv1beta1.ReferenceGrantTo{{Group: "", Kind: "Secret"}}}}
	input := func(secrets []*Secret, grants []*gwv1beta1.ReferenceGrant, refs ...gwv1.SecretObjectReference) Input {
		in := base()
		in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, httpsListener("web", 443, refs...))
		in.Secrets, in.Grants = secrets, grants
		return in
	}

	// Two refs: the first is the default, certificates sorted by name,
	// served by the names their leaves carry, ALPN h2 then http/1.1.
	got := terminations(input([]*Secret{a, b}, nil, secretRef("", "b"), secretRef("", "a")), nil)["web"]
	if got == nil || got.Default != "cert_apps_b" || !slices.Equal(certNames(got), []string{"cert_apps_a", "cert_apps_b"}) ||
		!slices.Equal(got.Cert("cert_apps_a").SNI, []string{"a.example", "*.a.example"}) || !slices.Equal(got.ALPN, []string{"h2", "http/1.1"}) ||
		string(got.Cert("cert_apps_a").PEM) != string(a.Bundle.PEM) {
		t.Fatalf("termination %+v", got)
	}

	for _, tc := range []struct {
		name  string
		in    Input
		want  []string
		memo  bool // after a pass where a and b were valid
		dflt  string
		state string // the listener's ResolvedRefs
	}{
		{"another namespace's Secret without a grant: not served", input([]*Secret{a, other}, nil, secretRef("", "a"), secretRef("certs", "c")),
			[]string{"cert_apps_a"}, false, "cert_apps_a", "False/RefNotPermitted"},
		{"with a grant", input([]*Secret{a, other}, []*gwv1beta1.ReferenceGrant{grant}, secretRef("", "a"), secretRef("certs", "c")),
			[]string{"cert_apps_a", "cert_certs_c"}, false, "cert_apps_a", "True/ResolvedRefs"},
		{"a Secret never valid serves nothing", input([]*Secret{bad, b}, nil, secretRef("", "a"), secretRef("", "b")),
			[]string{"cert_apps_b"}, false, "cert_apps_b", "False/InvalidCertificateRef"},
		{"a Secret turned bad keeps its last good certificate", input([]*Secret{bad, b}, nil, secretRef("", "a"), secretRef("", "b")),
			[]string{"cert_apps_a", "cert_apps_b"}, true, "cert_apps_a", "False/InvalidCertificateRef"},
		{"a deleted Secret keeps its last good certificate", input([]*Secret{b}, nil, secretRef("", "a"), secretRef("", "b")),
			[]string{"cert_apps_a", "cert_apps_b"}, true, "cert_apps_a", "False/InvalidCertificateRef"},
		{"the same Secret twice", input([]*Secret{a}, nil, secretRef("", "a"), secretRef("apps", "a")),
			[]string{"cert_apps_a"}, false, "cert_apps_a", "True/ResolvedRefs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var memo *CertMemo
			if tc.memo {
				memo = &CertMemo{}
				terminations(input([]*Secret{a, b}, nil, secretRef("", "a"), secretRef("", "b")), memo)
			}
			got := terminations(tc.in, memo)["web"]
			if !slices.Equal(certNames(got), tc.want) || got.Default != tc.dflt {
				t.Fatalf("certificates %v default %q, want %v %q", certNames(got), got.Default, tc.want, tc.dflt)
			}
			if tc.memo && string(got.Cert("cert_apps_a").PEM) != string(a.Bundle.PEM) {
				t.Fatal("not the last good certificate")
			}
			ls := listenerStatus(Compute(tc.in, Options{Certs: memo}), "apps", "gw", "web")
			want(t, condOf(ls.Conditions, "ResolvedRefs"), tc.state)
		})
	}

	// The memo forgets a Secret no listener refers to any more.
	memo := &CertMemo{}
	terminations(input([]*Secret{a, b}, nil, secretRef("", "a"), secretRef("", "b")), memo)
	terminations(input([]*Secret{a, b}, nil, secretRef("", "b")), memo)
	if got := terminations(input([]*Secret{bad, b}, nil, secretRef("", "a"), secretRef("", "b")), memo)["web"]; !slices.Equal(certNames(got), []string{"cert_apps_b"}) {
		t.Fatalf("a Secret referred to again served %v from a forgotten pass", certNames(got))
	}
}

func TestCertSecrets(t *testing.T) {
	in := base()
	g := in.Gateways[0]
	g.Spec.Listeners = append(g.Spec.Listeners, httpsListener("web", 443, secretRef("", "a"), secretRef("certs", "c")),
		listenerOf("plain", gwv1.HTTPProtocolType, 80, ""))
	cm := gwv1.Kind("ConfigMap")
	g.Spec.Listeners[len(g.Spec.Listeners)-2].TLS.CertificateRefs = append(g.Spec.Listeners[len(g.Spec.Listeners)-2].TLS.CertificateRefs,
		gwv1.SecretObjectReference{Name: "x", Kind: &cm})
	got := slices.SortedFunc(maps.Keys(CertSecrets(in.Gateways)), func(a, b Key) int {
		return cmpKey(a, b)
	})
	if !slices.Equal(got, []Key{{"apps", "a"}, {"certs", "c"}}) {
		t.Fatalf("CertSecrets = %v", got)
	}
}

func cmpKey(a, b Key) int {
	if a.String() < b.String() {
		return -1
	}
	if a.String() > b.String() {
		return 1
	}
	return 0
}
