package ingress

import (
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// How a backend's Pods share its requests: ingress-nginx's load-balance
// and HAProxy Ingress's balance-algorithm, onto HAProxy's balance (a
// backend keyword: the Ingress's backends are backends of their own,
// named by it, as for upstream-hash-by, which wins over both, as in
// ingress-nginx).
//
// ingress-nginx's round_robin is roundrobin. Its ewma (peak EWMA: the
// Pod whose latency, weighted by the requests it has in flight, is the
// lowest) is HAProxy's leastconn, the Pod with the fewest requests in
// flight: a slow Pod holds its requests longer, so concurrent requests
// move to the faster ones, as with ewma; unlike ewma, one client's
// requests sent one after the other alternate (no latency is measured).

// parseBalance reads load-balance (nginx) or balance-algorithm (HAProxy
// Ingress) into the balance written on the Ingress's backends ("":
// roundrobin, the default); done is false for the other keys.
func parseBalance(nginx bool, name, val string) (balance, why string, done bool) {
	switch {
	case nginx && name == "load-balance":
		switch strings.ToLower(val) {
		case "round_robin":
			return "", "", true
		case "ewma":
			return "leastconn", "", true
		}
		return "", settings.ShowValue(val) + " is not served: round_robin or ewma", true
	case !nginx && name == "balance-algorithm":
		switch v := strings.ToLower(val); v {
		case "roundrobin":
			return "", "", true
		case "leastconn", "source", "first", "random":
			return v, "", true
		}
		return "", settings.ShowValue(val) + " is not served: roundrobin, leastconn, source, first or random", true
	}
	return "", "", false
}
