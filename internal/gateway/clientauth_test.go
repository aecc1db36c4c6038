package gateway

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// validation is a client certificate validation of refs "Kind/ns/name"
// (ns "" for the Gateway's).
func validation(mode gwv1.FrontendValidationModeType, refs ...string) *gwv1.FrontendTLSValidation {
	v := &gwv1.FrontendTLSValidation{Mode: mode}
	for _, r := range refs {
		parts := strings.SplitN(r, "/", 3)
		o := gwv1.ObjectReference{Kind: gwv1.Kind(parts[0]), Name: gwv1.ObjectName(parts[2])}
		if parts[1] != "" {
			ns := gwv1.Namespace(parts[1])
			o.Namespace = &ns
		}
		v.CACertificateRefs = append(v.CACertificateRefs, o)
	}
	return v
}

// clientAuthOf is the client verification of the frontend on port, as
// "required|optional CA-name", "none", or "no frontend".
func clientAuthOf(res Result, port string) string {
	for _, f := range res.Config.Frontends {
		if !strings.HasSuffix(f.Name, "_"+port) {
			continue
		}
		switch {
		case f.TLS == nil:
			return "no TLS"
		case f.TLS.Client == nil:
			return "none"
		case !model.ValidClientAuth(f.TLS.Client):
			return "invalid"
		case f.TLS.Client.Optional:
			return "optional " + f.TLS.Client.CA
		}
		return "required " + f.TLS.Client.CA
	}
	return "no frontend"
}

func TestClientCertificateValidation(t *testing.T) {
	ca, other := testcert.CA(t, "client CA"), testcert.CA(t, "other client CA")
	cm := func(ns, name string, c testcert.Cert) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: meta(ns, name, 0), Data: map[string]string{CAKey: string(c.PEM())}}
	}
	caName := func(c testcert.Cert) string {
		w := &world{configMaps: map[Key]*corev1.ConfigMap{{"apps", "ca"}: cm("apps", "ca", c)}}
		l := &listener{spec: httpsListener("web", 443), port: 443, accepted: true, tls: &model.TLS{}}
		g := gateway("apps", "gw", "hks", 0)
		g.Spec.TLS = &gwv1.GatewayTLSConfig{Frontend: &gwv1.FrontendTLSConfig{Default: gwv1.TLSConfig{Validation: validation("", "ConfigMap//ca")}}}
		w.clientAuth(g, l, nil)
		return l.tls.Client.CA
	}
	cross := &gwv1beta1.ReferenceGrant{ObjectMeta: meta("certs", "g", 0), Spec: gwv1beta1.ReferenceGrantSpec{
		From: []gwv1beta1.ReferenceGrantFrom{{Group: gwv1.GroupName, Kind: "Gateway", Namespace: "apps"}},
		To:   []gwv1beta1.ReferenceGrantTo{{Group: "", Kind: "ConfigMap"}}}}
	for _, tc := range []struct {
		name         string
		dflt         *gwv1.FrontendTLSValidation
		port         *gwv1.FrontendTLSValidation // perPort 443
		cms          []*corev1.ConfigMap
		grants       []*gwv1beta1.ReferenceGrant
		memo         bool // after a pass where port 443 verified against ca
		want         string
		accepted     string
		resolved     string
		programmed   string
		insecureCond string
	}{
		{name: "no validation", want: "none", accepted: "True/Accepted", resolved: "True/ResolvedRefs", programmed: "True/Programmed", insecureCond: "-"},
		{name: "default: required", dflt: validation("", "ConfigMap//ca"), cms: []*corev1.ConfigMap{cm("apps", "ca", ca)},
			want: "required " + caName(ca), accepted: "True/Accepted", resolved: "True/ResolvedRefs", programmed: "True/Programmed", insecureCond: "-"},
		{name: "per port overrides the default", dflt: validation("", "ConfigMap//gone"), port: validation(gwv1.AllowInsecureFallback, "ConfigMap//other"),
			cms: []*corev1.ConfigMap{cm("apps", "other", other)}, want: "optional " + caName(other), accepted: "True/Accepted", resolved: "True/ResolvedRefs",
			programmed: "True/Programmed", insecureCond: "True/ConfigurationChanged"},
		{name: "insecure default, valid-only port: the Gateway says so anyway", dflt: validation(gwv1.AllowInsecureFallback, "ConfigMap//ca"),
			port: validation(gwv1.AllowValidOnly, "ConfigMap//ca"), cms: []*corev1.ConfigMap{cm("apps", "ca", ca)}, want: "required " + caName(ca),
			accepted: "True/Accepted", resolved: "True/ResolvedRefs", programmed: "True/Programmed", insecureCond: "True/ConfigurationChanged"},
		{name: "missing ConfigMap: the port binds nothing", dflt: validation("", "ConfigMap//gone"), want: "no frontend",
			accepted: "False/NoValidCACertificate", resolved: "False/InvalidCACertificateRef", programmed: "False/Invalid", insecureCond: "-"},
		{name: "a Service: invalid kind", dflt: validation("", "Service//ca"), cms: []*corev1.ConfigMap{cm("apps", "ca", ca)}, want: "no frontend",
			accepted: "False/NoValidCACertificate", resolved: "False/InvalidCACertificateKind", programmed: "False/Invalid", insecureCond: "-"},
		{name: "another namespace without a grant", dflt: validation("", "ConfigMap/certs/ca"), cms: []*corev1.ConfigMap{cm("certs", "ca", ca)},
			want: "no frontend", accepted: "False/NoValidCACertificate", resolved: "False/RefNotPermitted", programmed: "False/Invalid", insecureCond: "-"},
		{name: "another namespace with a grant", dflt: validation("", "ConfigMap/certs/ca"), cms: []*corev1.ConfigMap{cm("certs", "ca", ca)},
			grants: []*gwv1beta1.ReferenceGrant{cross}, want: "required " + caName(ca), accepted: "True/Accepted", resolved: "True/ResolvedRefs",
			programmed: "True/Programmed", insecureCond: "-"},
		{name: "no PEM in ca.crt", dflt: validation("", "ConfigMap//ca"), cms: []*corev1.ConfigMap{{ObjectMeta: meta("apps", "ca", 0), Data: map[string]string{CAKey: "verify none"}}},
			want: "no frontend", accepted: "False/NoValidCACertificate", resolved: "False/InvalidCACertificateRef", programmed: "False/Invalid", insecureCond: "-"},
		{name: "one of two refs resolves: served, not resolved", dflt: validation("", "ConfigMap//gone", "ConfigMap//ca"), cms: []*corev1.ConfigMap{cm("apps", "ca", ca)},
			want: "required " + caName(ca), accepted: "True/Accepted", resolved: "False/InvalidCACertificateRef", programmed: "True/Programmed", insecureCond: "-"},
		{name: "deleted after a valid pass: the last CA kept", dflt: validation("", "ConfigMap//ca"), memo: true, want: "required " + caName(ca),
			accepted: "True/Accepted", resolved: "False/InvalidCACertificateRef", programmed: "True/Programmed", insecureCond: "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := func(cms []*corev1.ConfigMap) Input {
				in := base()
				g := in.Gateways[0]
				g.Spec.Listeners = append(g.Spec.Listeners, httpsListener("web", 443, secretRef("", "a")))
				if tc.dflt != nil {
					g.Spec.TLS = &gwv1.GatewayTLSConfig{Frontend: &gwv1.FrontendTLSConfig{Default: gwv1.TLSConfig{Validation: tc.dflt}}}
					if tc.port != nil {
						g.Spec.TLS.Frontend.PerPort = []gwv1.TLSPortConfig{{Port: 443, TLS: gwv1.TLSConfig{Validation: tc.port}}}
					}
				}
				in.Secrets = []*Secret{tlsSecret(t, "apps", "a", "a.example")}
				in.ConfigMaps, in.Grants = cms, tc.grants
				return in
			}
			var memo *CAMemo
			if tc.memo {
				memo = &CAMemo{}
				if got := clientAuthOf(Compute(input([]*corev1.ConfigMap{cm("apps", "ca", ca)}), Options{CAs: memo}), "443"); got != "required "+caName(ca) {
					t.Fatalf("first pass: %s", got)
				}
			}
			res := Compute(input(tc.cms), Options{CAs: memo})
			want(t, clientAuthOf(res, "443"), tc.want)
			ls := listenerStatus(res, "apps", "gw", "web")
			want(t, condOf(ls.Conditions, "Accepted"), tc.accepted)
			want(t, condOf(ls.Conditions, "ResolvedRefs"), tc.resolved)
			want(t, condOf(ls.Conditions, "Programmed"), tc.programmed)
			want(t, condOf(res.Gateways[Key{"apps", "gw"}].Conditions, "InsecureFrontendValidationMode"), tc.insecureCond)
			// The other listeners are not touched.
			want(t, condOf(listenerStatus(res, "apps", "gw", "tcp").Conditions, "Accepted"), "True/Accepted")
		})
	}
}
