package render

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// TestGoldenCookie: a backend with cookie affinity gets HAProxy's cookie
// line and every slot, free ones included, its own name as value; a
// setting the validator refuses (a name, a path or a domain carrying
// syntax) renders no cookie; HAProxy loads it.
func TestGoldenCookie(t *testing.T) {
	srv := []model.Server{{Addr: netip.MustParseAddr("127.0.0.1"), Port: 8080}, {Addr: netip.MustParseAddr("127.0.0.2"), Port: 8080}}
	cfg := model.Config{
		Frontends: []model.Frontend{{Name: "ing_http", Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: 8080}},
			HTTP: model.Shaped(&model.HTTP{Hosts: []model.HTTPHost{{Name: "*", Rules: []model.HTTPRule{{PathType: "PathPrefix", Path: "/", Action: 0}}}},
				Actions: []model.HTTPAction{{Backends: []model.WeightedBackend{{Name: "ing_a", Weight: 1}}}}})}},
		Backends: []*model.Backend{
			{Name: "ing_a", Balance: "roundrobin", HTTP: true, Servers: srv,
				Cookie: &model.CookieAffinity{Name: "SRV", MaxAge: 3600, Secure: true, SameSite: "Lax"}},
			{Name: "ing_b", Balance: "roundrobin", HTTP: true, Servers: srv, Cookie: &model.CookieAffinity{Name: "INGRESSCOOKIE"}},
			{Name: "ing_c", Balance: "roundrobin", HTTP: true, Servers: srv, Cookie: &model.CookieAffinity{Name: "X; Domain=evil"}},
			{Name: "ing_d", Balance: "roundrobin", HTTP: true, Servers: srv, Cookie: &model.CookieAffinity{Name: "D", Path: "/app", Domain: ".example.com"}},
			{Name: "ing_e", Balance: "roundrobin", HTTP: true, Servers: srv, Cookie: &model.CookieAffinity{Name: "E", Path: "/a;evil"}},
			{Name: "ing_f", Balance: "roundrobin", HTTP: true, Servers: srv, Cookie: &model.CookieAffinity{Name: "F", Domain: "evil.example attr x"}},
		},
	}
	layout, _ := plan.Assign(cfg, nil, true)
	got := Config(cfg, layout, opts)
	golden.Assert(t, "cookie.cfg", got)
	for _, want := range []string{
		"\tcookie SRV insert indirect nocache httponly secure attr Max-Age=3600 attr SameSite=Lax\n",
		"\tcookie INGRESSCOOKIE insert indirect nocache httponly\n",
		" cookie s1\n",
		"\tcookie D insert indirect nocache httponly domain .example.com attr Path=/app\n",
	} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("no %q in the configuration", want)
		}
	}
	if bytes.Contains(got, []byte("evil")) {
		t.Error("a cookie name the validator refuses was rendered")
	}
	golden.HAProxyAccepts(t, got)
	other := *cfg.Backends[1]
	other.Cookie = &model.CookieAffinity{Name: "OTHER"}
	if cfg.Backends[1].SameStructure(&other) {
		t.Error("another cookie is the same structure")
	}
}
