package gateway

import (
	"fmt"
	"strings"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// hroute is an HTTPRoute on listener "web" of apps/gw.
func hroute(name string, age int, hosts []string, rules ...gwv1.HTTPRouteRule) *gwv1.HTTPRoute {
	r := &gwv1.HTTPRoute{ObjectMeta: meta("apps", name, age), Spec: gwv1.HTTPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{parent("gw", "web")}}, Rules: rules}}
	for _, h := range hosts {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gwv1.Hostname(h))
	}
	return r
}

// hrule sends its matches to Service svc (port 80; "" for none).
func hrule(svc string, matches ...gwv1.HTTPRouteMatch) gwv1.HTTPRouteRule {
	r := gwv1.HTTPRouteRule{Matches: matches}
	if svc != "" {
		r.BackendRefs = []gwv1.HTTPBackendRef{{BackendRef: ref("", svc, 80, 1)}}
	}
	return r
}

// hmatch is a path match ("Exact" or "PathPrefix") with headers "name=value".
func hmatch(typ, path string, headers ...string) gwv1.HTTPRouteMatch {
	t := gwv1.PathMatchType(typ)
	m := gwv1.HTTPRouteMatch{Path: &gwv1.HTTPPathMatch{Type: &t, Value: &path}}
	for _, h := range headers {
		n, v, _ := strings.Cut(h, "=")
		m.Headers = append(m.Headers, gwv1.HTTPHeaderMatch{Name: gwv1.HTTPHeaderName(n), Value: v})
	}
	return m
}

// table writes an HTTP table one rule a line: host, path, headers, and
// the action's backends or redirect.
func table(h *model.HTTP) string {
	if h == nil {
		return "no HTTP frontend"
	}
	var out []string
	for _, host := range h.Hosts {
		for _, r := range host.Rules {
			line := host.Name + " " + r.PathType + " " + r.Path
			if r.Method != "" {
				line += " " + model.MethodMatch + "=" + r.Method
			}
			for _, m := range r.Headers {
				line += " " + m.Name + "=" + m.Value
			}
			a := h.Actions[r.Action]
			switch {
			case a.Redirect != nil:
				line += fmt.Sprintf(" -> redirect %s %s %d %d", a.Redirect.Scheme, a.Redirect.Host, a.Redirect.Port, a.Redirect.Code)
			default:
				var bs []string
				for _, b := range a.Backends {
					bs = append(bs, fmt.Sprintf("%s:%d", strings.TrimPrefix(b.Name, "gwh_apps_"), b.Weight))
				}
				line += " -> " + strings.Join(bs, ",")
			}
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func httpInput(listenerHost string, routes ...*gwv1.HTTPRoute) Input {
	in := base()
	in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, listenerOf("web", gwv1.HTTPProtocolType, 80, listenerHost))
	in.HTTPRoutes = routes
	return in
}

// TestHTTPPrecedence: the spec's order across rules and routes: the most
// specific hostname, Exact path, longest prefix, most headers, oldest
// route, namespace/name, rule order.
func TestHTTPPrecedence(t *testing.T) {
	for _, tc := range []struct {
		name     string
		listener string
		routes   []*gwv1.HTTPRoute
		want     string
	}{
		{"exact before prefix, longest prefix first", "", []*gwv1.HTTPRoute{
			hroute("r", 1, nil, hrule("a", hmatch("PathPrefix", "/")), hrule("b", hmatch("PathPrefix", "/foo")), hrule("a", hmatch("Exact", "/foo/bar"))),
		}, "* Exact /foo/bar -> a_80:1\n* PathPrefix /foo -> b_80:1\n* PathPrefix / -> a_80:1"},
		{"more headers first, then the older route", "", []*gwv1.HTTPRoute{
			hroute("young", 2, nil, hrule("a", hmatch("PathPrefix", "/", "x=1", "y=2"))),
			hroute("old", 1, nil, hrule("b", hmatch("PathPrefix", "/", "x=1")), hrule("a", hmatch("PathPrefix", "/"))),
			hroute("older", 0, nil, hrule("b", hmatch("PathPrefix", "/"))),
		}, "* PathPrefix / x=1 y=2 -> a_80:1\n* PathPrefix / x=1 -> b_80:1\n* PathPrefix / -> b_80:1\n* PathPrefix / -> a_80:1"},
		{"a method before more headers", "", []*gwv1.HTTPRoute{
			hroute("r", 1, nil, hrule("a", hmatch("PathPrefix", "/", "x=1", "y=2")), func() gwv1.HTTPRouteRule {
				r := hrule("b", hmatch("PathPrefix", "/"))
				r.Matches[0].Method = ptr(gwv1.HTTPMethodPost)
				return r
			}()),
		}, "* PathPrefix / :method=POST -> b_80:1\n* PathPrefix / x=1 y=2 -> a_80:1"},
		{"same age: namespace/name", "", []*gwv1.HTTPRoute{
			hroute("zeta", 1, nil, hrule("a", hmatch("PathPrefix", "/"))),
			hroute("alpha", 1, nil, hrule("b", hmatch("PathPrefix", "/"))),
		}, "* PathPrefix / -> b_80:1\n* PathPrefix / -> a_80:1"},
		{"exact host before wildcard before any; each takes the less specific ones' rules", "", []*gwv1.HTTPRoute{
			hroute("any", 0, nil, hrule("a", hmatch("Exact", "/any"))),
			hroute("wild", 1, []string{"*.example.com"}, hrule("b", hmatch("PathPrefix", "/w"))),
			hroute("exact", 2, []string{"a.example.com"}, hrule("a", hmatch("PathPrefix", "/"))),
		}, "a.example.com PathPrefix / -> a_80:1\na.example.com PathPrefix /w -> b_80:1\na.example.com Exact /any -> a_80:1\n" +
			"*.example.com PathPrefix /w -> b_80:1\n*.example.com Exact /any -> a_80:1\n* Exact /any -> a_80:1"},
		{"hostnames narrowed to the listener's", "*.example.com", []*gwv1.HTTPRoute{
			hroute("r", 1, []string{"a.example.com", "b.example.net", "*.com"}, hrule("a")),
			hroute("s", 2, nil, hrule("b")),
		}, "a.example.com PathPrefix / -> a_80:1\na.example.com PathPrefix / -> b_80:1\n*.example.com PathPrefix / -> a_80:1\n*.example.com PathPrefix / -> b_80:1"},
		{"weights, a backendRef that does not resolve, a redirect", "", []*gwv1.HTTPRoute{
			hroute("r", 1, nil,
				gwv1.HTTPRouteRule{Matches: []gwv1.HTTPRouteMatch{hmatch("Exact", "/split")}, BackendRefs: []gwv1.HTTPBackendRef{
					{BackendRef: ref("", "a", 80, 70)}, {BackendRef: ref("", "b", 80, 20)}, {BackendRef: ref("", "missing", 80, 10)}}},
				gwv1.HTTPRouteRule{Matches: []gwv1.HTTPRouteMatch{hmatch("Exact", "/moved")}, Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestRedirect,
					RequestRedirect: &gwv1.HTTPRequestRedirectFilter{Hostname: ptr(gwv1.PreciseHostname("example.org")), StatusCode: ptr(301)}}}},
				hrule("", hmatch("Exact", "/nothing"))),
		}, "* Exact /nothing -> _reject:1\n* Exact /split -> a_80:70,b_80:20,_reject:10\n* Exact /moved -> redirect http example.org 0 301"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Compute(httpInput(tc.listener, tc.routes...), Options{UDP: true})
			if got := table(httpOf(res, "80")); got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestHTTPRouteRefused: what could carry HAProxy syntax or map separators,
// and what is not supported, is refused with a route condition and never
// reaches the table.
func TestHTTPRouteRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule gwv1.HTTPRouteRule
	}{
		{"a path with a space", hrule("a", hmatch("PathPrefix", "/a b"))},
		{"a path with a newline", hrule("a", hmatch("Exact", "/a\n\thttp-request deny"))},
		{"a path with #", hrule("a", hmatch("Exact", "/a#b"))},
		{"a path with ;", hrule("a", hmatch("Exact", "/a;show info"))},
		{"a header value with a space", hrule("a", hmatch("PathPrefix", "/", "x=a b"))},
		{"a header value with |", hrule("a", hmatch("PathPrefix", "/", "x=a|b"))},
		{"a header value with %", hrule("a", hmatch("PathPrefix", "/", "x=%[src]"))},
		{"a header name with (", hrule("a", hmatch("PathPrefix", "/", "x(=a"))},
		{"a regular expression path", func() gwv1.HTTPRouteRule {
			r := hrule("a", hmatch("PathPrefix", "/"))
			r.Matches[0].Path.Type = ptr(gwv1.PathMatchRegularExpression)
			return r
		}()},
		{"a regular expression query parameter match", func() gwv1.HTTPRouteRule {
			r := hrule("a", hmatch("PathPrefix", "/"))
			r.Matches[0].QueryParams = []gwv1.HTTPQueryParamMatch{{Type: ptr(gwv1.QueryParamMatchRegularExpression), Name: "q", Value: "1"}}
			return r
		}()},
		{"a header set with a newline", gwv1.HTTPRouteRule{Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestHeaderModifier,
			RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "x", Value: "a\r\nb"}}}}}}},
		{"a request mirror", gwv1.HTTPRouteRule{Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestMirror,
			RequestMirror: &gwv1.HTTPRequestMirrorFilter{}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Compute(httpInput("", hroute("bad", 1, nil, tc.rule), hroute("good", 2, nil, hrule("b", hmatch("Exact", "/good")))), Options{UDP: true})
			want(t, routeCond(res, KindHTTPRoute, "apps", "bad", "Accepted"), "False/UnsupportedValue")
			want(t, routeCond(res, KindHTTPRoute, "apps", "good", "Accepted"), "True/Accepted")
			want(t, table(httpOf(res, "80")), "* Exact /good -> b_80:1")
		})
	}
}

// FuzzHTTPRoute: whatever a route says, the table holds only text the
// model's validators accept (and Compute does not panic).
func FuzzHTTPRoute(f *testing.F) {
	f.Add("/a", "x", "v", "a.example.com", "y", "w")
	f.Add("/a b", "x y", "v\n", "*.example.com", "Y", "a|b")
	f.Fuzz(func(t *testing.T, path, hname, hvalue, host, sname, svalue string) {
		rule := hrule("a", hmatch("PathPrefix", path, hname+"="+hvalue))
		rule.Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestHeaderModifier,
			RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: gwv1.HTTPHeaderName(sname), Value: svalue}}, Remove: []string{sname}}}}
		in := httpInput("", hroute("r", 1, []string{host}, rule))
		in.HTTPRoutes[0].CreationTimestamp.Time = t0.Add(time.Second)
		h := httpOf(Compute(in, Options{UDP: true}), "80")
		if h == nil {
			return
		}
		for _, host := range h.Hosts {
			if host.Name != model.AnyHost && !model.ValidSNI(host.Name) {
				t.Fatalf("host %q", host.Name)
			}
			for _, r := range host.Rules {
				if !model.ValidHTTPPath(r.Path) {
					t.Fatalf("path %q", r.Path)
				}
				for _, m := range r.Headers {
					if !model.ValidHeaderName(m.Name) || !model.ValidHeaderValue(m.Value) {
						t.Fatalf("header %q=%q", m.Name, m.Value)
					}
				}
			}
		}
		for _, a := range h.Actions {
			for _, v := range append(a.Set, a.Add...) {
				if !model.ValidHeaderName(v.Name) || !model.ValidHeaderValue(v.Value) {
					t.Fatalf("header change %q=%q", v.Name, v.Value)
				}
			}
			for _, n := range a.Remove {
				if !model.ValidHeaderName(n) {
					t.Fatalf("header removed %q", n)
				}
			}
		}
	})
}

// An HTTPS listener with a certificate to serve is an HTTP frontend
// terminating TLS (main's model.TLS on its binds), Programmed, its routes
// served and redirected with https; without one it stays status only.
func TestHTTPSListenerServed(t *testing.T) {
	in := base()
	in.Gateways[0].Spec.Listeners = append(in.Gateways[0].Spec.Listeners, httpsListener("web", 443, secretRef("", "cert")))
	in.Secrets = []*Secret{tlsSecret(t, "apps", "cert", "a.example.com")}
	in.HTTPRoutes = []*gwv1.HTTPRoute{hroute("r", 1, nil, hrule("a", hmatch("PathPrefix", "/")),
		gwv1.HTTPRouteRule{Matches: []gwv1.HTTPRouteMatch{hmatch("Exact", "/moved")}, Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestRedirect,
			RequestRedirect: &gwv1.HTTPRequestRedirectFilter{Hostname: ptr(gwv1.PreciseHostname("example.org"))}}}})}
	res := Compute(in, Options{UDP: true})
	want(t, condOf(listenerStatus(res, "apps", "gw", "web").Conditions, "Programmed"), "True/Programmed")
	want(t, routeCond(res, KindHTTPRoute, "apps", "r", "Accepted"), "True/Accepted")
	want(t, table(httpOf(res, "443")), "* Exact /moved -> redirect https example.org 0 302\n* PathPrefix / -> a_80:1")
	for _, f := range res.Config.Frontends {
		if strings.HasSuffix(f.Name, "_443") && (f.TLS == nil || len(f.TLS.Certificates) != 1) {
			t.Errorf("frontend %s: TLS %+v, want its certificate", f.Name, f.TLS)
		}
	}
	// No certificate: status only, no frontend.
	in.Secrets = nil
	res = Compute(in, Options{UDP: true})
	want(t, condOf(listenerStatus(res, "apps", "gw", "web").Conditions, "Programmed"), "False/Invalid")
	want(t, routesOfFrontend(res, "443"), "no frontend")
}
