package ingress

import (
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// ingress-nginx's proxy-redirect-from/-to and proxy-cookie-domain/-path
// (nginx's proxy_redirect FROM TO, proxy_cookie_domain FROM TO,
// proxy_cookie_path FROM TO): the answers' Location and Refresh headers
// and Set-Cookie attributes rewritten, as model.ProxyRewrite on the
// access control of the Ingress's actions (map data, the Lua file's
// response action). "off" (the default) rewrites nothing, and so does
// proxy-redirect-from "default" (nginx's proxy_pass URL, which no Pod
// sends: ingress-nginx proxies to its upstream_balancer), or one of the
// redirect pair without the other (ingress-nginx writes no
// proxy_redirect then). nginx's regular expressions (~FROM) and
// variables ($name) are not served: such a value refuses the Ingress.

// parseProxyRewrite reads key name into r: done is false for the others.
func parseProxyRewrite(r *model.ProxyRewrite, name, val string) (why string, done bool) {
	switch name {
	case "proxy-redirect-from", "proxy-redirect-to":
		v := strings.TrimSpace(val)
		if v == "off" || (name == "proxy-redirect-from" && v == "default") {
			v = ""
		} else if why := rewriteValue(v); why != "" {
			return why, true
		}
		if name == "proxy-redirect-from" {
			r.RedirectFrom = v
		} else {
			r.RedirectTo = v
		}
		return "", true
	case "proxy-cookie-domain", "proxy-cookie-path":
		from, to := "", ""
		if v := strings.TrimSpace(val); v != "off" {
			f := strings.Fields(v)
			if len(f) != 2 {
				return settings.ShowValue(val) + " is not off or FROM TO", true
			}
			for _, s := range f {
				if why := rewriteValue(s); why != "" {
					return why, true
				}
			}
			from, to = f[0], f[1]
		}
		if name == "proxy-cookie-domain" {
			r.CookieDomainFrom, r.CookieDomainTo = from, to
		} else {
			r.CookiePathFrom, r.CookiePathTo = from, to
		}
		return "", true
	}
	return "", false
}

// rewriteValue is why v cannot be a string of model.ProxyRewrite ("": it
// can).
func rewriteValue(v string) string {
	switch {
	case strings.HasPrefix(v, "~"):
		return settings.ShowValue(v) + ": nginx's regular expressions are not served"
	case strings.Contains(v, "$"):
		return settings.ShowValue(v) + ": nginx variables are not served"
	case !model.ValidRewriteValue(v):
		return settings.ShowValue(v) + " is not visible ASCII without quotes, '\\', ';' or ',' (at most 1024 bytes)"
	}
	return ""
}

// proxyRewrite is the model of r: nil when it rewrites nothing (a
// redirect pair without both halves rewrites nothing, as in ingress-nginx).
func proxyRewrite(r model.ProxyRewrite) *model.ProxyRewrite {
	if r.RedirectFrom == "" || r.RedirectTo == "" {
		r.RedirectFrom, r.RedirectTo = "", ""
	}
	if r.Empty() {
		return nil
	}
	return &r
}
