package gateway

import (
	"fmt"
	"strings"
	"testing"
	"time"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// groute is a GRPCRoute on listener "web" of apps/gw.
func groute(name string, age int, hosts []string, rules ...gwv1.GRPCRouteRule) *gwv1.GRPCRoute {
	r := &gwv1.GRPCRoute{ObjectMeta: meta("apps", name, age), Spec: gwv1.GRPCRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{parent("gw", "web")}}, Rules: rules}}
	for _, h := range hosts {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gwv1.Hostname(h))
	}
	return r
}

// grule sends its matches to Service svc (port 80).
func grule(svc string, matches ...gwv1.GRPCRouteMatch) gwv1.GRPCRouteRule {
	return gwv1.GRPCRouteRule{Matches: matches, BackendRefs: []gwv1.GRPCBackendRef{{BackendRef: ref("", svc, 80, 1)}}}
}

// gmatch matches service and method ("" for none) and headers "name=value".
func gmatch(service, method string, headers ...string) gwv1.GRPCRouteMatch {
	var m gwv1.GRPCRouteMatch
	if service != "" || method != "" {
		m.Method = &gwv1.GRPCMethodMatch{}
		if service != "" {
			m.Method.Service = &service
		}
		if method != "" {
			m.Method.Method = &method
		}
	}
	for _, h := range headers {
		n, v, _ := strings.Cut(h, "=")
		m.Headers = append(m.Headers, gwv1.GRPCHeaderMatch{Name: gwv1.GRPCHeaderName(n), Value: v})
	}
	return m
}

func grpcInput(routes ...*gwv1.GRPCRoute) Input {
	in := httpInput("")
	in.GRPCRoutes = routes
	return in
}

// TestGRPCRoute: a GRPCRoute's matches become the HTTP table's rules
// (service and method an Exact path, a service alone a prefix, headers
// as they are), in the spec's precedence beside HTTPRoutes, its
// backends h2c whatever the Service port says.
func TestGRPCRoute(t *testing.T) {
	for _, tc := range []struct {
		name   string
		routes []*gwv1.GRPCRoute
		http   []*gwv1.HTTPRoute
		want   string
	}{
		{"service and method, service alone, headers, no match", []*gwv1.GRPCRoute{groute("g", 1, nil,
			grule("a", gmatch("pkg.Echo", "Echo")),
			grule("b", gmatch("pkg.Echo", "")),
			grule("a", gmatch("", "", "version=two", "Color=orange")),
			grule("b")),
		}, nil, "* Exact /pkg.Echo/Echo -> g_a_80:1\n* PathPrefix /pkg.Echo -> g_b_80:1\n" +
			"* PathPrefix / version=two color=orange -> g_a_80:1\n* PathPrefix / -> g_b_80:1"},
		{"beside an HTTPRoute, in one precedence", []*gwv1.GRPCRoute{groute("g", 2, []string{"a.example.com"},
			grule("a", gmatch("pkg.Echo", "Echo")))},
			[]*gwv1.HTTPRoute{hroute("h", 1, nil, hrule("b", hmatch("PathPrefix", "/")))},
			"a.example.com Exact /pkg.Echo/Echo -> g_a_80:1\na.example.com PathPrefix / -> b_80:1\n* PathPrefix / -> b_80:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := grpcInput(tc.routes...)
			in.HTTPRoutes = tc.http
			res := Compute(in, Options{UDP: true})
			for _, r := range tc.routes {
				want(t, routeCond(res, KindGRPCRoute, "apps", r.Name, "Accepted"), "True/Accepted")
			}
			got := strings.ReplaceAll(table(httpOf(res, "80")), "gwg_apps_", "g_")
			if got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
			for _, b := range res.Config.Backends {
				if strings.HasPrefix(b.Name, "gwg_") != b.H2C {
					t.Errorf("backend %s: H2C %v", b.Name, b.H2C)
				}
			}
			var kinds []string
			for _, k := range listenerStatus(res, "apps", "gw", "web").SupportedKinds {
				kinds = append(kinds, string(k.Kind))
			}
			want(t, strings.Join(kinds, ","), "HTTPRoute,GRPCRoute")
		})
	}
}

// TestGRPCRouteRefused: what the table cannot express or could carry
// HAProxy syntax is refused with the route's condition and reaches
// nothing; the other routes are served.
func TestGRPCRouteRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule gwv1.GRPCRouteRule
		why  string
	}{
		{"a method without its service", grule("a", gmatch("", "Echo")), "without a service"},
		{"a service with a slash", grule("a", gmatch("pkg/Echo", "Echo")), "is not a dotted name"},
		{"a method with a space", grule("a", gmatch("pkg.Echo", "Echo x")), "is not a name"},
		{"a method with a newline", grule("a", gmatch("pkg.Echo", "E\n\thttp-request deny")), "is not a name"},
		{"a regular expression method", func() gwv1.GRPCRouteRule {
			r := grule("a", gmatch("pkg.Echo", "Echo"))
			r.Matches[0].Method.Type = ptr(gwv1.GRPCMethodMatchRegularExpression)
			return r
		}(), "method match type RegularExpression"},
		{"a header value with |", grule("a", gmatch("pkg.Echo", "", "x=a|b")), "header value"},
		{"a header name with (", grule("a", gmatch("", "", "x(=a")), "header name"},
		{"a header set with a newline", gwv1.GRPCRouteRule{Filters: []gwv1.GRPCRouteFilter{{Type: gwv1.GRPCRouteFilterRequestHeaderModifier,
			RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "x", Value: "a\r\nb"}}}}}}, "filters[0]"},
		{"a backend's response header with %", gwv1.GRPCRouteRule{BackendRefs: []gwv1.GRPCBackendRef{{BackendRef: ref("", "a", 80, 1),
			Filters: []gwv1.GRPCRouteFilter{{Type: gwv1.GRPCRouteFilterResponseHeaderModifier,
				ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Add: []gwv1.HTTPHeader{{Name: "x", Value: "%[src]"}}}}}}}}, "backendRefs[0]"},
		{"a request mirror", gwv1.GRPCRouteRule{Filters: []gwv1.GRPCRouteFilter{{Type: gwv1.GRPCRouteFilterRequestMirror,
			RequestMirror: &gwv1.HTTPRequestMirrorFilter{}}}}, "filter type RequestMirror is not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Compute(grpcInput(groute("bad", 1, nil, tc.rule), groute("good", 2, nil, grule("b", gmatch("pkg.Echo", "Good")))), Options{UDP: true})
			want(t, routeCond(res, KindGRPCRoute, "apps", "bad", "Accepted"), "False/UnsupportedValue")
			if msg := res.Routes.Get(RouteKey{KindGRPCRoute, Key{"apps", "bad"}})[0].Conditions[0].Message; !strings.Contains(msg, tc.why) {
				t.Errorf("message %q, want it to say %q", msg, tc.why)
			}
			want(t, routeCond(res, KindGRPCRoute, "apps", "good", "Accepted"), "True/Accepted")
			want(t, strings.ReplaceAll(table(httpOf(res, "80")), "gwg_apps_", "g_"), "* Exact /pkg.Echo/Good -> g_b_80:1")
		})
	}
}

// A listener whose allowedRoutes.kinds names GRPCRoute alone takes no
// HTTPRoute, and one naming HTTPRoute alone no GRPCRoute.
func TestGRPCRouteKinds(t *testing.T) {
	for _, kind := range []string{KindHTTPRoute, KindGRPCRoute} {
		in := grpcInput(groute("g", 1, nil, grule("a")))
		in.HTTPRoutes = []*gwv1.HTTPRoute{hroute("h", 1, nil, hrule("a"))}
		l := &in.Gateways[0].Spec.Listeners[len(in.Gateways[0].Spec.Listeners)-1]
		l.AllowedRoutes = &gwv1.AllowedRoutes{Kinds: []gwv1.RouteGroupKind{{Kind: gwv1.Kind(kind)}}}
		res := Compute(in, Options{UDP: true})
		ls := listenerStatus(res, "apps", "gw", "web")
		if len(ls.SupportedKinds) != 1 || string(ls.SupportedKinds[0].Kind) != kind || ls.AttachedRoutes != 1 {
			t.Errorf("kinds [%s]: supportedKinds %v, attachedRoutes %d", kind, ls.SupportedKinds, ls.AttachedRoutes)
		}
		other := map[string]string{KindHTTPRoute: KindGRPCRoute, KindGRPCRoute: KindHTTPRoute}[kind]
		name := map[string]string{KindHTTPRoute: "h", KindGRPCRoute: "g"}
		want(t, routeCond(res, kind, "apps", name[kind], "Accepted"), "True/Accepted")
		want(t, routeCond(res, other, "apps", name[other], "Accepted"), "False/NotAllowedByListeners")
	}
}

// FuzzGRPCRoute: whatever a GRPCRoute says, the table holds only paths
// and headers the model's validators accept (and Compute does not panic).
func FuzzGRPCRoute(f *testing.F) {
	f.Add("pkg.Echo", "Echo", "x", "v", "y", "w")
	f.Add("pkg/Echo", "E cho", "x y", "v\n", "Y", "a|b")
	f.Fuzz(func(t *testing.T, service, method, hname, hvalue, sname, svalue string) {
		rule := grule("a", gmatch(service, method, hname+"="+hvalue))
		rule.Filters = []gwv1.GRPCRouteFilter{{Type: gwv1.GRPCRouteFilterResponseHeaderModifier,
			ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: gwv1.HTTPHeaderName(sname), Value: svalue}}}}}
		in := grpcInput(groute("r", 1, nil, rule))
		in.GRPCRoutes[0].CreationTimestamp.Time = t0.Add(time.Second)
		h := httpOf(Compute(in, Options{UDP: true}), "80")
		if h == nil {
			return
		}
		for _, host := range h.Hosts {
			for _, r := range host.Rules {
				if !model.ValidHTTPPath(r.Path) || strings.Count(r.Path, "/") > 3 {
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
			if a.Ext == nil {
				continue
			}
			for _, v := range append(a.Ext.Response.Set, a.Ext.Response.Add...) {
				if !model.ValidHeaderName(v.Name) || !model.ValidHeaderValue(v.Value) {
					t.Fatalf("response header change %q=%q", v.Name, v.Value)
				}
			}
		}
	})
}

// A GRPCRoute changed into one that cannot be served keeps serving its
// last valid rules (Options.Routes), its condition saying why; without
// the memo, or for a route never valid, it serves nothing; a deleted
// route is forgotten.
func TestGRPCRouteKeepsLastGood(t *testing.T) {
	good := groute("g", 1, nil, grule("a", gmatch("pkg.Echo", "Echo")))
	bad := groute("g", 1, nil, grule("b", gmatch("", "Echo")))
	bad.Generation = 4
	var memo RouteMemo
	res := Compute(grpcInput(good), Options{UDP: true, Routes: &memo})
	want(t, routeCond(res, KindGRPCRoute, "apps", "g", "Accepted"), "True/Accepted")

	res = Compute(grpcInput(bad), Options{UDP: true, Routes: &memo})
	want(t, routeCond(res, KindGRPCRoute, "apps", "g", "Accepted"), "False/UnsupportedValue")
	c := res.Routes.Get(RouteKey{KindGRPCRoute, Key{"apps", "g"}})[0].Conditions[0]
	if !strings.Contains(c.Message, "without a service") || !strings.Contains(c.Message, "last valid version is served") || c.ObservedGeneration != 4 {
		t.Errorf("condition %+v", c)
	}
	want(t, strings.ReplaceAll(table(httpOf(res, "80")), "gwg_apps_", "g_"), "* Exact /pkg.Echo/Echo -> g_a_80:1")
	want(t, fmt.Sprint(listenerStatus(res, "apps", "gw", "web").AttachedRoutes), "1")

	// No memo: nothing served.
	res = Compute(grpcInput(bad), Options{UDP: true})
	want(t, routeCond(res, KindGRPCRoute, "apps", "g", "Accepted"), "False/UnsupportedValue")
	want(t, table(httpOf(res, "80")), "") // an empty table: 404

	// Deleted, then back bad: never valid since, serves nothing.
	Compute(grpcInput(), Options{UDP: true, Routes: &memo})
	res = Compute(grpcInput(bad), Options{UDP: true, Routes: &memo})
	want(t, table(httpOf(res, "80")), "") // an empty table: 404
}
