package gateway

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// btlsPolicyOf targets Service svc (section "" for every port) with a
// hostname and CA refs "Kind/name".
func btlsPolicyOf(name string, age int, svc, section, host string, cas ...string) *gwv1.BackendTLSPolicy {
	p := &gwv1.BackendTLSPolicy{ObjectMeta: meta("apps", name, age)}
	t := gwv1.LocalPolicyTargetReferenceWithSectionName{LocalPolicyTargetReference: gwv1.LocalPolicyTargetReference{Kind: "Service", Name: gwv1.ObjectName(svc)}}
	if section != "" {
		t.SectionName = ptr(gwv1.SectionName(section))
	}
	p.Spec.TargetRefs = []gwv1.LocalPolicyTargetReferenceWithSectionName{t}
	p.Spec.Validation.Hostname = gwv1.PreciseHostname(host)
	for _, c := range cas {
		k, n, _ := strings.Cut(c, "/")
		p.Spec.Validation.CACertificateRefs = append(p.Spec.Validation.CACertificateRefs, gwv1.LocalObjectReference{Kind: gwv1.Kind(k), Name: gwv1.ObjectName(n)})
	}
	return p
}

func caMap(name, data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: meta("apps", name, 0), Data: map[string]string{CAKey: data}}
}

func policyCond(res Result, name, typ string) string {
	st, ok := res.Policies[Key{"apps", name}]
	if !ok || len(st.Ancestors) == 0 {
		return "no ancestor"
	}
	return condOf(st.Ancestors[0].Conditions, typ)
}

// backendTLSOf is the TLS of the backend of Service svc's port 80.
func backendTLSOf(res Result, svc string) string {
	for _, b := range res.Config.Backends {
		// A backend speaking TLS is named apart (server state, tlsSuffix).
		if b.Name == name("gwh", "apps", svc, "80") {
			if b.TLS != nil {
				return "TLS under the clear backend's name"
			}
			return "clear"
		}
		if b.Name == name("gwhs", "apps", svc, "80") {
			if b.TLS == nil {
				return "clear under the TLS backend's name"
			}
			return b.TLS.SNI + " " + b.TLS.CA
		}
	}
	return "no backend"
}

func TestBackendTLSPolicy(t *testing.T) {
	ca := testcert.CA(t, "backend CA")
	// Two certificates with a blank line between: the bundle is written
	// again without it (a Runtime API payload ends at a blank line).
	other := testcert.CA(t, "other CA")
	good := string(ca.PEM()) + "\n" + string(other.PEM())
	// The bundle is named for its policy (cafile.go), whatever it holds.
	caName, oldName := model.Name("ca", "apps", "p"), model.Name("ca", "apps", "old")
	for _, tc := range []struct {
		name     string
		policies []*gwv1.BackendTLSPolicy
		cms      []*corev1.ConfigMap
		policy   string // whose conditions
		accepted string
		resolved string
		backend  string // of Service a
	}{
		{name: "valid: TLS with SNI and CA", policies: []*gwv1.BackendTLSPolicy{btlsPolicyOf("p", 1, "a", "", "a.example.com", "ConfigMap/ca")},
			cms: []*corev1.ConfigMap{caMap("ca", good)}, policy: "p", accepted: "True/Accepted", resolved: "True/ResolvedRefs", backend: "a.example.com " + caName},
		{name: "section name of the port", policies: []*gwv1.BackendTLSPolicy{btlsPolicyOf("p", 1, "a", "p", "a.example.com", "ConfigMap/ca")},
			cms: []*corev1.ConfigMap{caMap("ca", good)}, policy: "p", accepted: "True/Accepted", resolved: "True/ResolvedRefs", backend: "a.example.com " + caName},
		{name: "another port's section: clear", policies: []*gwv1.BackendTLSPolicy{btlsPolicyOf("p", 1, "a", "other", "a.example.com", "ConfigMap/ca")},
			cms: []*corev1.ConfigMap{caMap("ca", good)}, policy: "p", accepted: "no ancestor", resolved: "no ancestor", backend: "clear"},
		{name: "ConfigMap missing: refused", policies: []*gwv1.BackendTLSPolicy{btlsPolicyOf("p", 1, "a", "", "a.example.com", "ConfigMap/ca")},
			policy: "p", accepted: "False/NoValidCACertificate", resolved: "False/InvalidCACertificateRef", backend: "no backend"},
		{name: "bad PEM: refused", policies: []*gwv1.BackendTLSPolicy{btlsPolicyOf("p", 1, "a", "", "a.example.com", "ConfigMap/ca")},
			cms: []*corev1.ConfigMap{caMap("ca", "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n")}, policy: "p",
			accepted: "False/NoValidCACertificate", resolved: "False/InvalidCACertificateRef", backend: "no backend"},
		{name: "a Secret as CA: invalid kind", policies: []*gwv1.BackendTLSPolicy{btlsPolicyOf("p", 1, "a", "", "a.example.com", "Secret/ca")},
			cms: []*corev1.ConfigMap{caMap("ca", good)}, policy: "p", accepted: "False/NoValidCACertificate", resolved: "False/InvalidKind", backend: "no backend"},
		{name: "one of two refs bad: served, refs not resolved", policies: []*gwv1.BackendTLSPolicy{btlsPolicyOf("p", 1, "a", "", "a.example.com", "ConfigMap/ca", "ConfigMap/gone")},
			cms: []*corev1.ConfigMap{caMap("ca", good)}, policy: "p", accepted: "True/Accepted", resolved: "False/InvalidCACertificateRef", backend: "a.example.com " + caName},
		{name: "younger of two on a target: conflicted", policies: []*gwv1.BackendTLSPolicy{btlsPolicyOf("old", 1, "a", "", "a.example.com", "ConfigMap/ca"),
			btlsPolicyOf("young", 2, "a", "", "b.example.com", "ConfigMap/ca")},
			cms: []*corev1.ConfigMap{caMap("ca", good)}, policy: "young", accepted: "False/Conflicted", resolved: "True/ResolvedRefs", backend: "a.example.com " + oldName},
		{name: "subjectAltNames: not verified, refused", policies: []*gwv1.BackendTLSPolicy{func() *gwv1.BackendTLSPolicy {
			p := btlsPolicyOf("p", 1, "a", "", "a.example.com", "ConfigMap/ca")
			p.Spec.Validation.SubjectAltNames = []gwv1.SubjectAltName{{Type: gwv1.HostnameSubjectAltNameType, Hostname: "b.example.com"}}
			return p
		}()}, cms: []*corev1.ConfigMap{caMap("ca", good)}, policy: "p", accepted: "False/Invalid", resolved: "True/ResolvedRefs", backend: "no backend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, listenerOf("web", gwv1.HTTPProtocolType, 80, ""))
			in.HTTPRoutes = []*gwv1.HTTPRoute{hroute("r", 1, nil, hrule("a", hmatch("PathPrefix", "/")))}
			in.BackendTLSPolicies, in.ConfigMaps = tc.policies, tc.cms
			res := Compute(in, Options{UDP: true})
			want(t, policyCond(res, tc.policy, "Accepted"), tc.accepted)
			want(t, policyCond(res, tc.policy, "ResolvedRefs"), tc.resolved)
			want(t, backendTLSOf(res, "a"), tc.backend)
			if tc.backend == "no backend" {
				want(t, table(httpOf(res, "80")), "* PathPrefix / -> _reject:1")
			}
			for _, b := range res.Config.Backends {
				if b.TLS != nil && (!model.ValidBackendTLS(b.TLS) || strings.Contains(string(b.TLS.CAPEM), "\n\n")) {
					t.Errorf("backend %s: TLS %q not valid, or a blank line in its CA", b.Name, b.TLS.SNI)
				}
			}
		})
	}
}

// A policy served once keeps its last good CA when its ConfigMap turns
// bad, with the condition saying so; without the memo it is refused.
func TestBackendTLSPolicyKeepsLastGood(t *testing.T) {
	in := base()
	in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, listenerOf("web", gwv1.HTTPProtocolType, 80, ""))
	in.HTTPRoutes = []*gwv1.HTTPRoute{hroute("r", 1, nil, hrule("a", hmatch("PathPrefix", "/")))}
	in.BackendTLSPolicies = []*gwv1.BackendTLSPolicy{btlsPolicyOf("p", 1, "a", "", "a.example.com", "ConfigMap/ca")}
	pemCA := testcert.CA(t, "backend CA").PEM()
	in.ConfigMaps = []*corev1.ConfigMap{caMap("ca", string(pemCA))}
	caName := model.Name("ca", "apps", "p")
	memo := &CAMemo{}
	res := Compute(in, Options{UDP: true, CAs: memo})
	want(t, backendTLSOf(res, "a"), "a.example.com "+caName)
	good := res.Config.Backends
	in.ConfigMaps = []*corev1.ConfigMap{caMap("ca", "")}
	res = Compute(in, Options{UDP: true, CAs: memo})
	want(t, policyCond(res, "p", "Accepted"), "False/NoValidCACertificate")
	want(t, backendTLSOf(res, "a"), "a.example.com "+caName)
	for i, b := range res.Config.Backends {
		if b.TLS != nil && !b.TLS.Equal(good[i].TLS) {
			t.Errorf("backend %s: CA changed, want the last good one", b.Name)
		}
	}
	res = Compute(in, Options{UDP: true})
	want(t, backendTLSOf(res, "a"), "no backend")
}

// A Gateway's backend client certificate is presented by its TLS
// backends (a backend of their own, named by the certificate), and its
// ResolvedRefs says whether the Secret resolved; a Secret missing leaves
// the TLS backend presenting nothing and the condition False.
func TestGatewayBackendClientCertificate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		secrets  []*Secret
		ns       string // the ref's namespace; "": the Gateway's
		resolved string
		cert     bool
	}{
		{name: "resolved", secrets: []*Secret{tlsSecret(t, "apps", "client", "gateway.example.com")}, resolved: "True/ResolvedRefs", cert: true},
		{name: "missing", resolved: "False/InvalidClientCertificateRef"},
		{name: "another namespace without a grant", ns: "other", secrets: []*Secret{tlsSecret(t, "other", "client", "gateway.example.com")},
			resolved: "False/RefNotPermitted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, listenerOf("web", gwv1.HTTPProtocolType, 80, ""))
			ref := secretRef(tc.ns, "client")
			in.Gateways[0].Spec.TLS = &gwv1.GatewayTLSConfig{Backend: &gwv1.GatewayBackendTLS{ClientCertificateRef: &ref}}
			in.HTTPRoutes = []*gwv1.HTTPRoute{hroute("r", 1, nil, hrule("a", hmatch("PathPrefix", "/")))}
			in.BackendTLSPolicies = []*gwv1.BackendTLSPolicy{btlsPolicyOf("p", 1, "a", "", "a.example.com", "ConfigMap/ca")}
			in.ConfigMaps = []*corev1.ConfigMap{caMap("ca", string(testcert.CA(t, "backend CA").PEM()))}
			in.Secrets = tc.secrets
			res := Compute(in, Options{UDP: true})
			want(t, condOf(res.Gateways[Key{"apps", "gw"}].Conditions, "ResolvedRefs"), tc.resolved)
			var tlsBackends []*model.Backend
			for _, b := range res.Config.Backends {
				if b.TLS != nil {
					tlsBackends = append(tlsBackends, b)
				}
			}
			if len(tlsBackends) != 1 {
				t.Fatalf("%d TLS backends, want 1", len(tlsBackends))
			}
			b := tlsBackends[0]
			if got := b.TLS.Cert != "" && len(b.TLS.CertPEM) > 0 && b.Name != name("gwhs", "apps", "a", "80"); got != tc.cert {
				t.Errorf("backend %s presents %q: %v, want %v", b.Name, b.TLS.Cert, got, tc.cert)
			}
			if !model.ValidBackendTLS(b.TLS) {
				t.Errorf("backend %s: TLS not valid", b.Name)
			}
		})
	}
	// No clientCertificateRef: no ResolvedRefs of the Gateway's own.
	in := base()
	want(t, condOf(Compute(in, Options{UDP: true}).Gateways[Key{"apps", "gw"}].Conditions, "ResolvedRefs"), "-")
}

// A Gateway's backend client certificate rotated in its Secret keeps its
// file's name and its backend's (named for the Secret): only the bundle
// changes, which the local driver commits at runtime, no reload
// (runtimeapi/clientcerts.go).
func TestGatewayBackendClientCertificateRotated(t *testing.T) {
	in := base()
	in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, listenerOf("web", gwv1.HTTPProtocolType, 80, ""))
	ref := secretRef("", "client")
	in.Gateways[0].Spec.TLS = &gwv1.GatewayTLSConfig{Backend: &gwv1.GatewayBackendTLS{ClientCertificateRef: &ref}}
	in.HTTPRoutes = []*gwv1.HTTPRoute{hroute("r", 1, nil, hrule("a", hmatch("PathPrefix", "/")))}
	in.BackendTLSPolicies = []*gwv1.BackendTLSPolicy{btlsPolicyOf("p", 1, "a", "", "a.example.com", "ConfigMap/ca")}
	in.ConfigMaps = []*corev1.ConfigMap{caMap("ca", string(testcert.CA(t, "backend CA").PEM()))}
	tlsOf := func() *model.Backend {
		t.Helper()
		res := Compute(in, Options{UDP: true})
		for _, b := range res.Config.Backends {
			if b.TLS != nil {
				return b
			}
		}
		t.Fatal("no TLS backend")
		return nil
	}
	in.Secrets = []*Secret{tlsSecret(t, "apps", "client", "gateway.example.com")}
	before := tlsOf()
	in.Secrets = []*Secret{tlsSecret(t, "apps", "client", "gateway.example.com")} // another key pair
	after := tlsOf()
	if want := model.Name("ccert", "apps", "client"); before.TLS.Cert != want || after.TLS.Cert != want {
		t.Errorf("certificate files %q, then %q; want %q both", before.TLS.Cert, after.TLS.Cert, want)
	}
	if before.Name != after.Name || !before.SameStructure(after) {
		t.Errorf("backend %s, then %s: the structure changed", before.Name, after.Name)
	}
	if bytes.Equal(before.TLS.CertPEM, after.TLS.CertPEM) {
		t.Error("the rotated certificate is not the one presented")
	}
}
