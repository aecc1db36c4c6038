package gateway

import (
	"fmt"
	"slices"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// terminate makes base's TLS listener (9443, *.example.com) terminate
// TLS with the Secrets named.
func terminate(in *Input, listener int, secrets ...string) {
	m := gwv1.TLSModeTerminate
	l := &in.Gateways[0].Spec.Listeners[listener]
	l.TLS = &gwv1.ListenerTLSConfig{Mode: &m}
	for _, s := range secrets {
		l.TLS.CertificateRefs = append(l.TLS.CertificateRefs, secretRef("", s))
	}
}

func frontendOf(res Result, port string) *model.Frontend {
	for i, f := range res.Config.Frontends {
		if f.Name == name("gw", "apps", "gw", port) {
			return &res.Config.Frontends[i]
		}
	}
	return nil
}

func TestTLSTerminate(t *testing.T) {
	star := tlsSecret(t, "apps", "star", "*.example.com")
	other := tlsSecret(t, "apps", "other", "c.example.org")
	for _, tc := range []struct {
		name   string
		change func(in *Input)
		check  func(t *testing.T, res Result)
	}{
		{"served: routes by server name behind the listener's certificate", func(in *Input) {
			terminate(in, 1, "star")
			in.Secrets = []*Secret{star}
		}, func(t *testing.T, res Result) {
			ls := listenerStatus(res, "apps", "gw", "tls")
			want(t, condOf(ls.Conditions, "Accepted"), "True/Accepted")
			want(t, condOf(ls.Conditions, "Programmed"), "True/Programmed")
			want(t, condOf(ls.Conditions, "ResolvedRefs"), "True/ResolvedRefs")
			want(t, fmt.Sprint(ls.SupportedKinds[0].Kind, " ", len(ls.SupportedKinds), " ", ls.AttachedRoutes), "TLSRoute 1 2")
			want(t, routesOfFrontend(res, "9443"), "a.example.com=gwt_apps_a_80:1 b.example.com=gwt_apps_b_80:1")
			f := frontendOf(res, "9443")
			if f == nil || f.TLS == nil || f.TLS.Default != "cert_apps_star" || len(f.TLS.ALPN) != 0 ||
				!slices.Equal(f.TLS.Cert("cert_apps_star").SNI, []string{"*.example.com"}) {
				t.Fatalf("frontend 9443 terminates %+v", f)
			}
			if fr := frontendOf(res, "9000"); fr == nil || fr.TLS != nil {
				t.Fatal("the TCP listener's frontend terminates TLS")
			}
		}},
		{"no valid certificate yet: status only, not Programmed, no frontend", func(in *Input) {
			terminate(in, 1, "star")
		}, func(t *testing.T, res Result) {
			ls := listenerStatus(res, "apps", "gw", "tls")
			want(t, condOf(ls.Conditions, "Accepted"), "True/Accepted")
			want(t, condOf(ls.Conditions, "Programmed"), "False/Invalid")
			want(t, condOf(ls.Conditions, "ResolvedRefs"), "False/InvalidCertificateRef")
			want(t, routesOfFrontend(res, "9443"), "no frontend")
		}},
		{"Passthrough and Terminate on one port: both refused, ProtocolConflict", func(in *Input) {
			pass := listenerOf("pass", gwv1.TLSProtocolType, 9443, "pass.example.net")
			in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, pass)
			terminate(in, 1, "star")
			in.Secrets = []*Secret{star}
		}, func(t *testing.T, res Result) {
			for _, l := range []string{"tls", "pass"} {
				ls := listenerStatus(res, "apps", "gw", l)
				want(t, condOf(ls.Conditions, "Accepted"), "False/ProtocolConflict")
				want(t, condOf(ls.Conditions, "Conflicted"), "True/ProtocolConflict")
				want(t, fmt.Sprint(len(ls.SupportedKinds)), "0")
			}
			want(t, routesOfFrontend(res, "9443"), "no frontend")
		}},
		{"two Terminate listeners on one port: one frontend, both certificates", func(in *Input) {
			org := listenerOf("org", gwv1.TLSProtocolType, 9443, "c.example.org")
			in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, org)
			terminate(in, 1, "star")
			terminate(in, 3, "other")
			in.Secrets = []*Secret{star, other}
			in.TLSRoutes = append(in.TLSRoutes, tlsRoute("apps", "tc", 3, []gwv1.ParentReference{parent("gw", "org")}, []string{"c.example.org"}, ref("", "a", 80, 1)))
		}, func(t *testing.T, res Result) {
			want(t, condOf(listenerStatus(res, "apps", "gw", "org").Conditions, "Programmed"), "True/Programmed")
			want(t, routesOfFrontend(res, "9443"), "a.example.com=gwt_apps_a_80:1 b.example.com=gwt_apps_b_80:1 c.example.org=gwt_apps_a_80:1")
			f := frontendOf(res, "9443")
			if f == nil || f.TLS == nil || f.TLS.Default != "cert_apps_star" || !slices.Equal(certNames(f.TLS), []string{"cert_apps_other", "cert_apps_star"}) {
				t.Fatalf("frontend 9443 terminates %+v", f)
			}
		}},
		{"another tls.mode: refused", func(in *Input) {
			m := gwv1.TLSModeType("Other")
			in.Gateways[0].Spec.Listeners[1].TLS.Mode = &m
		}, func(t *testing.T, res Result) {
			want(t, condOf(listenerStatus(res, "apps", "gw", "tls").Conditions, "Accepted"), "False/UnsupportedValue")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			tc.change(&in)
			tc.check(t, Compute(in, Options{}))
		})
	}

	// The Secrets the source keeps include a Terminate listener's.
	in := base()
	terminate(&in, 1, "star")
	if !CertSecrets(in.Gateways)[Key{"apps", "star"}] {
		t.Error("CertSecrets leaves out a TLS Terminate listener's Secret")
	}
}
