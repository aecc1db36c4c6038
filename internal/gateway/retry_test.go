package gateway

import (
	"fmt"
	"strings"
	"testing"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestRetryCompiled: a rule with a retry policy sends its requests to a
// retrying twin of each backend (its own name per policy, the same
// servers, retry-on and retries); a rule without keeps the plain
// backend; two rules with one policy share the twin.
func TestRetryCompiled(t *testing.T) {
	n := 3
	retry := func(r gwv1.HTTPRouteRule, codes ...gwv1.HTTPRouteRetryStatusCode) gwv1.HTTPRouteRule {
		r.Retry = &gwv1.HTTPRouteRetry{Codes: codes, Attempts: &n}
		return r
	}
	res := Compute(httpInput("", hroute("r", 1, nil,
		retry(hrule("a", hmatch("PathPrefix", "/x")), 503, 500),
		retry(hrule("a", hmatch("PathPrefix", "/y")), 500, 503),
		hrule("a", hmatch("PathPrefix", "/")),
		func() gwv1.HTTPRouteRule {
			r := hrule("b", hmatch("PathPrefix", "/z"))
			r.Retry = &gwv1.HTTPRouteRetry{}
			return r
		}(),
	)), Options{UDP: true})
	want(t, routeCond(res, KindHTTPRoute, "apps", "r", "Accepted"), "True/Accepted")
	want(t, table(httpOf(res, "80")), "* PathPrefix /x -> a_80_r3-500-503:1\n* PathPrefix /y -> a_80_r3-500-503:1\n* PathPrefix /z -> b_80_r2:1\n* PathPrefix / -> a_80:1")
	var got []string
	for _, b := range res.Config.Backends {
		if strings.HasPrefix(b.Name, "gwh_") {
			got = append(got, fmt.Sprintf("%s %q %d servers=%d", b.Name, b.RetryOn, b.Retries, len(b.Servers)))
		}
	}
	want(t, strings.Join(got, "\n"), `gwh_apps_a_80 "" 0 servers=2
gwh_apps_a_80_r3-500-503 "conn-failure empty-response response-timeout 500 503" 3 servers=2
gwh_apps_b_80 "" 0 servers=1
gwh_apps_b_80_r2 "conn-failure empty-response response-timeout" 2 servers=1`)
}

// TestRetryRefused: a policy HAProxy cannot follow refuses the route
// (UnsupportedValue) and leaves the others served.
func TestRetryRefused(t *testing.T) {
	many, backoff := 11, gwv1.Duration("100ms")
	for _, tc := range []struct {
		name  string
		retry gwv1.HTTPRouteRetry
	}{
		{"a code HAProxy cannot retry on", gwv1.HTTPRouteRetry{Codes: []gwv1.HTTPRouteRetryStatusCode{599}}},
		{"too many attempts", gwv1.HTTPRouteRetry{Attempts: &many}},
		{"a backoff", gwv1.HTTPRouteRetry{Backoff: &backoff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := hrule("a", hmatch("PathPrefix", "/"))
			r.Retry = &tc.retry
			res := Compute(httpInput("", hroute("bad", 1, nil, r), hroute("good", 2, nil, hrule("b", hmatch("Exact", "/good")))), Options{UDP: true})
			want(t, routeCond(res, KindHTTPRoute, "apps", "bad", "Accepted"), "False/UnsupportedValue")
			want(t, routeCond(res, KindHTTPRoute, "apps", "good", "Accepted"), "True/Accepted")
			want(t, table(httpOf(res, "80")), "* Exact /good -> b_80:1")
		})
	}
}
