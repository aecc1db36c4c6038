package ingress

import (
	"regexp"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// ingress-nginx's upstream-hash-by: each request goes to the Pod an
// nginx variable's value hashes to, on a consistent hash ring (Pods
// coming and going move few keys). HAProxy's balance is a backend
// keyword, so the Ingress's backends are backends of their own, named by
// the setting ("h" and the balance: its first use is one reload). The
// variables served are the ones with a balance of their own: a whole
// expression of one variable, $request_uri, $uri, $remote_addr
// ($binary_remote_addr), $host, $http_NAME and $arg_NAME; a variable
// among text, or another, refuses the Ingress.

// hashVar is one nginx variable, $name, alone.
var hashVar = regexp.MustCompile(`^\$(request_uri|uri|remote_addr|binary_remote_addr|host|http_[a-z0-9_]{1,64}|arg_[A-Za-z0-9_.~-]{1,64})$`)

// parseHashBy reads upstream-hash-by into the balance written on the
// Ingress's backends.
func parseHashBy(val string) (balance, why string) {
	m := hashVar.FindStringSubmatch(val)
	if m == nil {
		return "", settings.ShowValue(val) + " is not served: only one of $request_uri, $uri, $remote_addr, $host, $http_NAME, $arg_NAME, alone"
	}
	v := m[1]
	switch {
	case v == "request_uri":
		return "uri whole", ""
	case v == "uri":
		return "uri", ""
	case v == "remote_addr", v == "binary_remote_addr":
		return "source", ""
	case v == "host":
		return "hdr(host)", ""
	case strings.HasPrefix(v, "http_"):
		// nginx's $http_x_user is header X-User.
		h := strings.ReplaceAll(strings.TrimPrefix(v, "http_"), "_", "-")
		if !model.ValidHeaderName(h) {
			return "", settings.ShowValue(val) + " does not name a header"
		}
		return "hdr(" + h + ")", ""
	}
	return "url_param " + strings.TrimPrefix(v, "arg_"), ""
}
