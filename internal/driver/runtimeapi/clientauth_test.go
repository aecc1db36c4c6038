package runtimeapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// TestClientAuthTogglesWithoutReload: AllowValidOnly turned on, off and
// on again on one terminating frontend is crt-list lines, a CA file
// created at runtime and a map entry (render/clientauth.go): no reload;
// while on, a client without a certificate or with one of another CA is
// refused, and a client naming no host too; the clients of another
// terminating frontend are never asked for a certificate. The fallback
// (optional) is the bind's: one reload.
func TestClientAuthTogglesWithoutReload(t *testing.T) {
	l := startLab(t)
	w := newTLSWorld(t)
	ctx := context.Background()
	caA, caB := testcert.CA(t, "client CA a"), testcert.CA(t, "client CA b")
	clients := map[string]*tls.Certificate{"none": nil, "a": testcert.ClientPair(t, caA, "client"), "b": testcert.ClientPair(t, caB, "client")}
	_, cert := w.issue(testcert.ECDSA, "a.example")
	otherPort := uint16(haproxytest.FreePort(t))
	other := fmt.Sprintf("127.0.0.1:%d", otherPort)
	cfgOf := func(a *model.ClientAuth) model.Config {
		cfg := w.config(cert.Name, cert)
		cfg.Frontends[0].TLS.Client = a
		fe := cfg.Frontends[0]
		fe.Name, fe.Binds = "fe_other", []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: otherPort}}
		fe.TLS = &model.TLS{Certificates: []model.Certificate{cert}, Default: cert.Name}
		cfg.Frontends = append(cfg.Frontends, fe)
		return cfg
	}
	// want polls until every client gets its outcome (tlsProbe) naming
	// a.example and naming no host, on the frontend and on the other.
	want := func(step string, sni, none, a, b string) {
		t.Helper()
		var last string
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			last = ""
			for c, out := range map[string]string{"none": none, "a": a, "b": b} {
				if got := tlsProbe(w.addr, sni, clients[c]); got != out {
					last += fmt.Sprintf(" client %s sni %q: %s, want %s;", c, sni, got, out)
				}
				if got := tlsProbe(other, sni, clients[c]); got != "200" {
					last += fmt.Sprintf(" the other frontend, client %s sni %q: %s, want 200;", c, sni, got)
				}
			}
			if last == "" {
				return
			}
		}
		t.Fatalf("%s:%s", step, last)
	}
	apply := func(step string, a *model.ClientAuth, reload bool) {
		t.Helper()
		res, err := l.d.Apply(ctx, cfgOf(a))
		if err != nil || res.Reloaded != reload {
			t.Fatalf("%s: reloaded %v (want %v), %v", step, res.Reloaded, reload, err)
		}
	}
	required := &model.ClientAuth{CA: "cca_default_gw_443", CAPEM: caA.PEM()}

	if res, err := l.d.Apply(ctx, cfgOf(nil)); err != nil || !res.Reloaded {
		t.Fatalf("first apply: reloaded %v, %v", res.Reloaded, err)
	}
	base := l.reloads(ctx, t)
	want("off", "a.example", "200", "200", "200")
	for i := range 2 {
		apply(fmt.Sprint("on ", i), required, false)
		want(fmt.Sprint("on ", i), "a.example", "refused+asked", "200+asked", "refused+asked")
		want(fmt.Sprint("on ", i), "", "refused", "refused", "refused")
		apply(fmt.Sprint("off ", i), nil, false)
		want(fmt.Sprint("off ", i), "a.example", "200", "200", "200")
		want(fmt.Sprint("off ", i), "", "200", "200", "200")
	}
	if n := l.reloads(ctx, t); n != base {
		t.Errorf("%d reloads turning AllowValidOnly on and off, want 0", n-base)
	}
	apply("optional", &model.ClientAuth{CA: "cca_default_gw_443", CAPEM: caA.PEM(), Optional: true}, true)
	want("optional", "a.example", "200+asked", "200+asked", "200+asked")
}
