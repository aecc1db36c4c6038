package ingress

import (
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// FuzzParseAnnotations: whatever an honoured annotation's value says,
// what reaches the model passes the model's validators (nothing a user
// writes becomes HAProxy syntax or a map separator).
func FuzzParseAnnotations(f *testing.F) {
	for i := range honoured {
		f.Add(i, "true")
		f.Add(i, "a.example.com")
		f.Add(i, "X-A: 1\nx-b 2")
		f.Add(i, "10.0.0.0/8, 2001:db8::1")
		f.Add(i, "8m")
	}
	f.Fuzz(func(t *testing.T, i int, v string) {
		if i < 0 {
			i = -i
		}
		s, _, refused := parseAnnotations(map[string]string{honoured[i%len(honoured)]: v})
		if refused != "" {
			return
		}
		for _, h := range s.set {
			if !model.ValidHeaderName(h.Name) || !model.ValidHeaderSetValue(h.Value) { // map values only (hdrs10)
				t.Fatalf("header %q=%q from %q", h.Name, h.Value, v)
			}
		}
		for _, a := range append(s.aliases, s.redirectFrom...) {
			if !model.ValidSNI(a) {
				t.Fatalf("host %q from %q", a, v)
			}
		}
		for _, r := range append(s.access.allow, s.access.deny...) {
			if !r.IsValid() || r != r.Masked() || r.Addr().Zone() != "" {
				t.Fatalf("range %v from %q", r, v)
			}
		}
		if a := s.access; a.maxBody < 0 || a.maxBody > maxBody || a.rps < 0 || a.conns < 0 {
			t.Fatalf("limits %d %d %d from %q", a.maxBody, a.rps, a.conns, v)
		}
		for _, n := range []string{s.btls.name, s.btls.sni, s.btls.verifyHost} { // backendtls.go
			if n != "" && (!model.ValidSNI(n) || strings.Contains(n, "*")) {
				t.Fatalf("backend TLS name %q from %q", n, v)
			}
		}
		if c, _ := s.cookie.affinity(); c != nil && !model.ValidCookieAffinity(c) { // cookie.go
			t.Fatalf("cookie %+v from %q", *c, v)
		}
		if !model.ValidRealm(s.auth.realm) {
			t.Fatalf("realm %q from %q", s.auth.realm, v)
		}
		for _, p := range s.canary.matches("main", "canary") { // canary.go
			for _, m := range p.headers {
				n, isCookie := strings.CutPrefix(m.Name, model.CookieMatch)
				if (isCookie && !model.ValidCookieName(n)) || (!isCookie && !model.ValidHeaderName(n)) || !model.ValidHeaderValue(m.Value) {
					t.Fatalf("canary match %q=%q from %q", m.Name, m.Value, v)
				}
			}
		}
		if on, n, _, _ := s.retry.policy(); on != "" && (!model.ValidRetryOn(on) || n < 0 || n > model.MaxRetries) { // retry.go
			t.Fatalf("retry %q %d from %q", on, n, v)
		}
	})
}

// FuzzRouting: whatever a path (read as ingress-nginx's regular
// expression) and a rewrite-target or redirect say, what reaches the
// model passes its validators: paths, a prefix's depth, redirect hosts.
func FuzzRouting(f *testing.F) {
	f.Add("/api(/|$)(.*)", "/$2", "https://a.example.com/x", false)
	f.Add("/svc/(.*)", "/internal/$1", "http://b.example.com:8080", true)
	f.Add("/v1\\.0/.*", "/", "", false)
	f.Add("/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r(/|$)(.*)", "/x/$2", "", false)
	f.Fuzz(func(t *testing.T, p, target, redirect string, haproxy bool) {
		prefix, group, ok := regexPath(p)
		if !ok {
			return
		}
		if strings.ContainsAny(p, `*+?()[]{}|^$\`) && !model.ValidHTTPPath(prefix) {
			t.Fatalf("regex %q read as path %q", p, prefix)
		}
		if !model.ValidHTTPPath(prefix) {
			return // compileOne refuses it
		}
		a := map[string]string{NginxPrefix + "rewrite-target": target}
		if haproxy {
			a = map[string]string{HAProxyPrefix + "rewrite-target": target}
		}
		if redirect != "" {
			a[NginxPrefix+"permanent-redirect"] = redirect
		}
		s, _, refused := parseAnnotations(a)
		if refused != "" {
			return
		}
		for _, typ := range []string{model.PathPrefix, model.PathExact} {
			ext, rd, why := s.pathRoute(typ, prefix, group)
			if why != "" {
				continue
			}
			if rd != nil && (!model.ValidSNI(rd.Host) || strings.HasPrefix(rd.Host, "*") || (rd.Scheme != "http" && rd.Scheme != "https") || !slices.Contains(model.RedirectCodes, rd.Code)) {
				t.Fatalf("redirect %+v from %q", rd, redirect)
			}
			if ext != nil && ext.Path != nil {
				if pr := ext.Path; !model.ValidHTTPPath(pr.Replace) || pr.Strip < 0 || pr.Strip > model.RewriteDepth {
					t.Fatalf("rewrite %+v from path %q target %q redirect %q", *pr, p, target, redirect)
				}
			}
		}
	})
}
