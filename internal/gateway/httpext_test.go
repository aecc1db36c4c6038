package gateway

import (
	"fmt"
	"strings"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// extTable writes an HTTP table's rules with their query matches and
// their actions' extended features, one rule a line.
func extTable(h *model.HTTP) string {
	if h == nil {
		return "no HTTP frontend"
	}
	var out []string
	for _, host := range h.Hosts {
		for _, r := range host.Rules {
			line := host.Name + " " + r.PathType + " " + r.Path
			for _, m := range r.Headers {
				line += " " + m.Name + "=" + m.Value
			}
			for _, q := range r.Query {
				line += " ?" + q.Name + "=" + q.Value
			}
			a := h.Actions[r.Action]
			if a.Redirect != nil {
				line += fmt.Sprintf(" -> redirect %d", a.Redirect.Code)
			}
			for _, b := range a.Backends {
				line += fmt.Sprintf(" -> %s:%d", strings.TrimPrefix(b.Name, "gwh_apps_"), b.Weight)
			}
			if x := a.Ext; x != nil {
				if p := x.Path; p != nil {
					line += fmt.Sprintf(" path=%s prefix=%v strip=%d", p.Replace, p.Prefix, p.Strip)
				}
				if x.Host != "" {
					line += " host=" + x.Host
				}
				if x.Timeout > 0 {
					line += " timeout=" + x.Timeout.String()
				}
				if !x.Response.Empty() {
					line += fmt.Sprintf(" response=%v", x.Response)
				}
				for i, m := range x.BackendMods {
					if !m.Empty() {
						line += fmt.Sprintf(" b%d=%v", i, m)
					}
				}
			}
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func prefixMod(p string) *gwv1.HTTPPathModifier {
	return &gwv1.HTTPPathModifier{Type: gwv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: &p}
}

func fullMod(p string) *gwv1.HTTPPathModifier {
	return &gwv1.HTTPPathModifier{Type: gwv1.FullPathHTTPPathModifier, ReplaceFullPath: &p}
}

// TestHTTPExtCompiled: each extended feature of a route as the table
// holds it.
func TestHTTPExtCompiled(t *testing.T) {
	dur := func(s string) *gwv1.Duration { d := gwv1.Duration(s); return &d }
	with := func(r gwv1.HTTPRouteRule, change func(*gwv1.HTTPRouteRule)) gwv1.HTTPRouteRule { change(&r); return r }
	for _, tc := range []struct {
		name  string
		rules []gwv1.HTTPRouteRule
		want  string
	}{
		{"query parameters, case-sensitive, after headers in precedence", []gwv1.HTTPRouteRule{
			with(hrule("a", hmatch("PathPrefix", "/")), func(r *gwv1.HTTPRouteRule) {
				r.Matches[0].QueryParams = []gwv1.HTTPQueryParamMatch{{Name: "animal", Value: "whale"}, {Name: "ANIMAL", Value: "Whale"}, {Name: "animal", Value: "other"}}
			}),
			hrule("b", hmatch("PathPrefix", "/", "version=four")),
		}, "* PathPrefix / version=four -> b_80:1\n* PathPrefix / ?animal=whale ?ANIMAL=Whale -> a_80:1"},
		{"a prefix rewritten strips each match's own segments", []gwv1.HTTPRouteRule{
			with(hrule("a", hmatch("PathPrefix", "/prefix/one/"), hmatch("PathPrefix", "/p")), func(r *gwv1.HTTPRouteRule) {
				r.Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{Path: prefixMod("/one")}}}
			}),
		}, "* PathPrefix /prefix/one/ -> a_80:1 path=/one prefix=true strip=2\n* PathPrefix /p -> a_80:1 path=/one prefix=true strip=1"},
		{"a whole path and the host rewritten, a timeout", []gwv1.HTTPRouteRule{
			with(hrule("a", hmatch("PathPrefix", "/full")), func(r *gwv1.HTTPRouteRule) {
				h := gwv1.PreciseHostname("one.example.org")
				r.Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{Hostname: &h, Path: fullMod("/one")}}}
				r.Timeouts = &gwv1.HTTPRouteTimeouts{Request: dur("2s"), BackendRequest: dur("500ms")}
			}),
			with(hrule("b", hmatch("PathPrefix", "/none")), func(r *gwv1.HTTPRouteRule) {
				r.Timeouts = &gwv1.HTTPRouteTimeouts{Request: dur("0s")}
			}),
		}, "* PathPrefix /full -> a_80:1 path=/one prefix=false strip=0 host=one.example.org timeout=500ms\n* PathPrefix /none -> b_80:1"},
		{"a redirect's path", []gwv1.HTTPRouteRule{
			with(hrule("", hmatch("PathPrefix", "/original")), func(r *gwv1.HTTPRouteRule) {
				r.Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwv1.HTTPRequestRedirectFilter{Path: prefixMod("/new")}}}
			}),
		}, "* PathPrefix /original -> redirect 302 path=/new prefix=true strip=1"},
		{"response headers", []gwv1.HTTPRouteRule{
			with(hrule("a", hmatch("PathPrefix", "/")), func(r *gwv1.HTTPRouteRule) {
				r.Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{
					Set: []gwv1.HTTPHeader{{Name: "X-Set", Value: "s"}}, Add: []gwv1.HTTPHeader{{Name: "X-Add", Value: "a"}}, Remove: []string{"Server"}}}}
			}),
		}, "* PathPrefix / -> a_80:1 response={[{x-set s}] [{x-add a}] [server]}"},
		{"each backendRef's own headers, by index, weights kept", []gwv1.HTTPRouteRule{
			with(hrule("a", hmatch("PathPrefix", "/")), func(r *gwv1.HTTPRouteRule) {
				set := func(v string) []gwv1.HTTPRouteFilter {
					return []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gwv1.HTTPHeaderFilter{
						Set: []gwv1.HTTPHeader{{Name: "Backend", Value: v}}}}}
				}
				r.BackendRefs = []gwv1.HTTPBackendRef{{BackendRef: ref("", "a", 80, 10), Filters: set("a")}, {BackendRef: ref("", "b", 80, 0)},
					{BackendRef: ref("", "a", 80, 10), Filters: set("again")}}
			}),
		}, "* PathPrefix / -> a_80:10 -> b_80:0 -> a_80:10 b0={[{backend a}] [] []} b2={[{backend again}] [] []}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Compute(httpInput("", hroute("r", 1, nil, tc.rules...)), Options{UDP: true})
			want(t, routeCond(res, KindHTTPRoute, "apps", "r", "Accepted"), "True/Accepted")
			want(t, extTable(httpOf(res, "80")), tc.want)
		})
	}
}

// TestHTTPExtRefused: what the extended features cannot serve, or text
// that could carry HAProxy syntax, refuses the route (UnsupportedValue)
// and leaves the others served.
func TestHTTPExtRefused(t *testing.T) {
	filter := func(f gwv1.HTTPRouteFilter, matches ...gwv1.HTTPRouteMatch) gwv1.HTTPRouteRule {
		if len(matches) == 0 {
			matches = []gwv1.HTTPRouteMatch{hmatch("PathPrefix", "/")}
		}
		r := hrule("a", matches...)
		r.Filters = []gwv1.HTTPRouteFilter{f}
		return r
	}
	query := func(name, value string) gwv1.HTTPRouteRule {
		r := hrule("a", hmatch("PathPrefix", "/"))
		r.Matches[0].QueryParams = []gwv1.HTTPQueryParamMatch{{Name: gwv1.HTTPHeaderName(name), Value: value}}
		return r
	}
	rewrite := func(u gwv1.HTTPURLRewriteFilter, matches ...gwv1.HTTPRouteMatch) gwv1.HTTPRouteRule {
		return filter(gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &u}, matches...)
	}
	host := func(h string) *gwv1.PreciseHostname { p := gwv1.PreciseHostname(h); return &p }
	deep := "/" + strings.Repeat("a/", model.RewriteDepth+1)
	for _, tc := range []struct {
		name string
		rule gwv1.HTTPRouteRule
	}{
		{"a query parameter name with )", query("a)b", "v")},
		{"a query parameter name with a space", query("a b", "v")},
		{"a query parameter value with |", query("a", "x|y")},
		{"a query parameter value with a newline", query("a", "x\ny")},
		{"a response header value with a newline", filter(gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterResponseHeaderModifier,
			ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "x", Value: "a\r\nb"}}}})},
		{"a response header name with (", filter(gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterResponseHeaderModifier,
			ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Remove: []string{"x("}}})},
		{"a rewritten host with a space", rewrite(gwv1.HTTPURLRewriteFilter{Hostname: host("a.example.com if")})},
		{"a rewritten host that is a wildcard", rewrite(gwv1.HTTPURLRewriteFilter{Hostname: host("*.example.com")})},
		{"a rewritten path with #", rewrite(gwv1.HTTPURLRewriteFilter{Path: fullMod("/a#b")})},
		{"a prefix replaced on an Exact match", rewrite(gwv1.HTTPURLRewriteFilter{Path: prefixMod("/a")}, hmatch("Exact", "/x"))},
		{"a prefix of too many segments replaced", rewrite(gwv1.HTTPURLRewriteFilter{Path: prefixMod("/a")}, hmatch("PathPrefix", deep))},
		{"a redirect's path with ;", filter(gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestRedirect,
			RequestRedirect: &gwv1.HTTPRequestRedirectFilter{Path: fullMod("/a;show info")}})},
		{"a timeout that is not a duration", func() gwv1.HTTPRouteRule {
			r := hrule("a", hmatch("PathPrefix", "/"))
			d := gwv1.Duration("1 s")
			r.Timeouts = &gwv1.HTTPRouteTimeouts{Request: &d}
			return r
		}()},
		{"a backendRef's mirror", func() gwv1.HTTPRouteRule {
			r := hrule("a", hmatch("PathPrefix", "/"))
			r.BackendRefs[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestMirror, RequestMirror: &gwv1.HTTPRequestMirrorFilter{}}}
			return r
		}()},
		{"a backendRef's header value with a newline", func() gwv1.HTTPRouteRule {
			r := hrule("a", hmatch("PathPrefix", "/"))
			r.BackendRefs[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestHeaderModifier,
				RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Add: []gwv1.HTTPHeader{{Name: "x", Value: "a\nb"}}}}}
			return r
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Compute(httpInput("", hroute("bad", 1, nil, tc.rule), hroute("good", 2, nil, hrule("b", hmatch("Exact", "/good")))), Options{UDP: true})
			want(t, routeCond(res, KindHTTPRoute, "apps", "bad", "Accepted"), "False/UnsupportedValue")
			want(t, routeCond(res, KindHTTPRoute, "apps", "good", "Accepted"), "True/Accepted")
			want(t, table(httpOf(res, "80")), "* Exact /good -> b_80:1")
		})
	}
}

// TestHTTPBackendH2C: a Service port with appProtocol kubernetes.io/h2c
// is an HTTP backend whose servers speak HTTP/2 in clear; the same
// Service's TCP backend (a TCPRoute) and its other ports do not.
func TestHTTPBackendH2C(t *testing.T) {
	in := httpInput("", hroute("r", 1, nil, hrule("a", hmatch("PathPrefix", "/")), hrule("b", hmatch("PathPrefix", "/b"))))
	for _, s := range in.Services {
		if s.Name == "a" {
			s.Spec.Ports[0].AppProtocol = ptr("kubernetes.io/h2c")
		}
		if s.Name == "b" {
			s.Spec.Ports[0].AppProtocol = ptr("kubernetes.io/ws")
		}
	}
	res := Compute(in, Options{UDP: true})
	got := map[string]bool{}
	for _, b := range res.Config.Backends {
		got[b.Name] = b.H2C
	}
	want(t, fmt.Sprint(got["gwh_apps_a_80"], got["gwh_apps_b_80"], got["gw_apps_a_80"]), "true false false")
}

// TestHTTPSListenerHosts: an HTTPS frontend's table names its listeners'
// hostnames (the one without as model.AnyHost), most specific first, for
// misdirected requests; an HTTP frontend's names none.
func TestHTTPSListenerHosts(t *testing.T) {
	in := base()
	named := func(name, host string) gwv1.Listener {
		l := httpsListener(name, 443, secretRef("", "cert"))
		if host != "" {
			l.Hostname = ptr(gwv1.Hostname(host))
		}
		return l
	}
	in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, named("https", ""), named("wild", "*.wildcard.org"),
		named("fourth", "fourth-example.wildcard.org"), listenerOf("web", gwv1.HTTPProtocolType, 80, ""))
	in.Secrets = []*Secret{tlsSecret(t, "apps", "cert", "a.example.com")}
	in.HTTPRoutes = []*gwv1.HTTPRoute{hroute("r", 1, nil, hrule("a", hmatch("PathPrefix", "/")))}
	in.HTTPRoutes[0].Spec.ParentRefs = []gwv1.ParentReference{parent("gw", "")}
	res := Compute(in, Options{UDP: true})
	want(t, strings.Join(httpOf(res, "443").Listeners, " "), "fourth-example.wildcard.org *.wildcard.org *")
	want(t, fmt.Sprint(httpOf(res, "80").Listeners), "[]")
}

// FuzzHTTPRouteExt: whatever the extended filters, matches and timeouts
// of a route say, Compute does not panic and no map entry the table
// becomes holds a space, a control character, a quote, '#', '\\' or
// ';' (the Runtime API's separator): only validated text reaches a map.
func FuzzHTTPRouteExt(f *testing.F) {
	f.Add("animal", "whale", "X-Set", "v", "a.example.org", "/one", "/prefix/one", "500ms")
	f.Add("a b", "x\ny", "x(", "a|b", "*.example.org", "/a b", "/", "1 s")
	f.Fuzz(func(t *testing.T, qname, qvalue, hname, hvalue, host, path, prefix, timeout string) {
		m := hmatch("PathPrefix", prefix)
		m.QueryParams = []gwv1.HTTPQueryParamMatch{{Name: gwv1.HTTPHeaderName(qname), Value: qvalue}}
		hf := &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: gwv1.HTTPHeaderName(hname), Value: hvalue}}, Remove: []string{hname}}
		h := gwv1.PreciseHostname(host)
		rule := hrule("a", m)
		rule.Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: hf},
			{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{Hostname: &h, Path: prefixMod(path)}}}
		rule.BackendRefs[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: hf}}
		d := gwv1.Duration(timeout)
		rule.Timeouts = &gwv1.HTTPRouteTimeouts{Request: &d}
		redirect := hrule("", hmatch("PathPrefix", prefix))
		redirect.Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwv1.HTTPRequestRedirectFilter{Path: fullMod(path)}}}
		assertCleanMaps(t, httpOf(Compute(httpInput("", hroute("r", 1, nil, rule, redirect)), Options{UDP: true}), "80")) // cors_test.go
	})
}
