package gateway

import (
	"fmt"
	"strings"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

func corsRule(f *gwv1.HTTPCORSFilter) gwv1.HTTPRouteRule {
	r := hrule("a", hmatch("PathPrefix", "/"))
	r.Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterCORS, CORS: f}}
	return r
}

// TestCORSCompiled: a CORS filter becomes the action's policy: origins
// and header names in lower case, methods as given, the API's default
// max age (5 s) when none is set.
func TestCORSCompiled(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name string
		f    *gwv1.HTTPCORSFilter
		want string
	}{
		{"everything", &gwv1.HTTPCORSFilter{AllowOrigins: []gwv1.CORSOrigin{"https://www.Foo.com", "https://*.bar.com:8443"}, AllowCredentials: &yes,
			AllowMethods: []gwv1.HTTPMethodWithWildcard{"GET", "OPTIONS"}, AllowHeaders: []gwv1.HTTPHeaderName{"X-Header-1"},
			ExposeHeaders: []gwv1.HTTPHeaderName{"X-Header-3"}, MaxAge: 3600},
			"&{Origins:[https://www.foo.com https://*.bar.com:8443] Credentials:true Methods:[GET OPTIONS] Headers:[x-header-1] Expose:[x-header-3] MaxAge:3600}"},
		{"wildcards, the default age", &gwv1.HTTPCORSFilter{AllowOrigins: []gwv1.CORSOrigin{"*"}, AllowMethods: []gwv1.HTTPMethodWithWildcard{"*"},
			AllowHeaders: []gwv1.HTTPHeaderName{"*"}},
			"&{Origins:[*] Credentials:false Methods:[*] Headers:[*] Expose:[] MaxAge:5}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Compute(httpInput("", hroute("r", 1, nil, corsRule(tc.f))), Options{UDP: true})
			want(t, routeCond(res, KindHTTPRoute, "apps", "r", "Accepted"), "True/Accepted")
			h := httpOf(res, "80")
			x := h.Actions[h.Hosts[0].Rules[0].Action].Ext
			if x == nil || x.CORS == nil {
				t.Fatal("no CORS policy")
			}
			want(t, fmt.Sprintf("%+v", x.CORS), tc.want)
		})
	}
}

// TestCORSRefused: an origin, method or header name that could carry
// HAProxy or map syntax (or that the model cannot match) refuses the
// route (UnsupportedValue) and leaves the others served.
func TestCORSRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    *gwv1.HTTPCORSFilter
	}{
		{"no filter body", nil},
		{"no origin", &gwv1.HTTPCORSFilter{}},
		{"an origin with a space", &gwv1.HTTPCORSFilter{AllowOrigins: []gwv1.CORSOrigin{"https://a.example if"}}},
		{"an origin with |", &gwv1.HTTPCORSFilter{AllowOrigins: []gwv1.CORSOrigin{"https://a|b"}}},
		{"an origin with a path", &gwv1.HTTPCORSFilter{AllowOrigins: []gwv1.CORSOrigin{"https://a.example/x"}}},
		{"a wildcard inside a host", &gwv1.HTTPCORSFilter{AllowOrigins: []gwv1.CORSOrigin{"https://a.*.example"}}},
		{"a method with ;", &gwv1.HTTPCORSFilter{AllowOrigins: []gwv1.CORSOrigin{"*"}, AllowMethods: []gwv1.HTTPMethodWithWildcard{"GET;show"}}},
		{"a header with a newline", &gwv1.HTTPCORSFilter{AllowOrigins: []gwv1.CORSOrigin{"*"}, AllowHeaders: []gwv1.HTTPHeaderName{"x\ny"}}},
		{"an exposed header with #", &gwv1.HTTPCORSFilter{AllowOrigins: []gwv1.CORSOrigin{"*"}, ExposeHeaders: []gwv1.HTTPHeaderName{"x#y"}}},
		{"an age past a year", &gwv1.HTTPCORSFilter{AllowOrigins: []gwv1.CORSOrigin{"*"}, MaxAge: 31536001}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Compute(httpInput("", hroute("bad", 1, nil, corsRule(tc.f)), hroute("good", 2, nil, hrule("b", hmatch("Exact", "/good")))), Options{UDP: true})
			want(t, routeCond(res, KindHTTPRoute, "apps", "bad", "Accepted"), "False/UnsupportedValue")
			want(t, routeCond(res, KindHTTPRoute, "apps", "good", "Accepted"), "True/Accepted")
			want(t, table(httpOf(res, "80")), "* Exact /good -> b_80:1")
		})
	}
}

// FuzzCORSFilter: whatever a CORS filter says, Compute does not panic
// and no map entry holds a space, a control character, a quote, '#',
// '\\' or ';': only validated text reaches the cors map.
func FuzzCORSFilter(f *testing.F) {
	f.Add("https://*.bar.com", "GET", "X-Header-1", "X-Header-3", int32(5), true)
	f.Add("https://a b", "GET;x", "x\ny", "a#b", int32(-1), false)
	f.Fuzz(func(t *testing.T, origin, method, header, expose string, age int32, cred bool) {
		rule := corsRule(&gwv1.HTTPCORSFilter{AllowOrigins: []gwv1.CORSOrigin{gwv1.CORSOrigin(origin)}, AllowCredentials: &cred,
			AllowMethods: []gwv1.HTTPMethodWithWildcard{gwv1.HTTPMethodWithWildcard(method)}, AllowHeaders: []gwv1.HTTPHeaderName{gwv1.HTTPHeaderName(header)},
			ExposeHeaders: []gwv1.HTTPHeaderName{gwv1.HTTPHeaderName(expose)}, MaxAge: age})
		assertCleanMaps(t, httpOf(Compute(httpInput("", hroute("r", 1, nil, rule)), Options{UDP: true}), "80"))
	})
}

// assertCleanMaps fails when an entry of the maps table becomes (nil:
// none) holds a space, a control character, a quote, '#', '\\' or ';'
// (the Runtime API's separator): what the fuzz targets check.
func assertCleanMaps(t *testing.T, table *model.HTTP) {
	t.Helper()
	if table == nil {
		return
	}
	for kind, es := range render.HTTPMaps(table) {
		for _, e := range es {
			for _, s := range []string{e.Key, e.Value} {
				if strings.ContainsAny(s, " \t\r\n\x00#\\\"';") || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r >= 0x7f }) {
					t.Fatalf("%s map entry %q %q", kind, e.Key, e.Value)
				}
			}
		}
	}
}
