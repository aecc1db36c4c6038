package ingress

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// External authentication: ingress-nginx's auth-url with auth-method,
// auth-response-headers and auth-signin, as a model.ExtAuth on the
// Ingress's actions (map data: render/extauth.go). Each request is first
// asked of the URL, with the request's headers; 2xx serves it (the named
// response headers set on the request), 401 and 403 are answered (401 with
// auth-signin: a redirect there), anything else 500. A malformed value
// refuses the Ingress (its last good version keeps serving): served
// without it, it would be open.

// maxAuthHeaders bounds auth-response-headers.
const maxAuthHeaders = 32

// extAuthAnnotations are the external authentication keys, checked.
type extAuthAnnotations struct {
	url, method, signin string
	headers             []string
	given               string // a key given without auth-url
}

// parseExtAuth reads an external authentication key (name without its
// prefix, ingress-nginx's only) into a: done is false for the others.
func (a *extAuthAnnotations) parseExtAuth(key, name, val string) (why string, done bool) {
	if !strings.HasPrefix(key, NginxPrefix) {
		return "", false
	}
	switch name {
	case "auth-url":
		if why := extAuthURLProblem(val); why != "" {
			return why, true
		}
		a.url = val
	case "auth-method":
		m := strings.ToUpper(val)
		if !slices.Contains(model.ExtAuthMethods, m) {
			return settings.ShowValue(val) + " is not one of " + strings.Join(model.ExtAuthMethods, ", "), true
		}
		a.method = m
	case "auth-response-headers":
		hs, why := parseAuthHeaders(val)
		if why != "" {
			return why, true
		}
		a.headers = hs
	case "auth-signin":
		if why := extAuthURLProblem(val); why != "" {
			return why, true
		}
		a.signin = val
	default:
		return "", false
	}
	if name != "auth-url" && a.given == "" {
		a.given = key
	}
	return "", true
}

// extAuthURLProblem is model.ExtAuthURLProblem, naming nginx's variables,
// which are not expanded.
func extAuthURLProblem(u string) string {
	if strings.Contains(u, "$") {
		return settings.ShowValue(u) + ": nginx variables ($host, $escaped_request_uri, ...) are not expanded; name the host"
	}
	if why := model.ExtAuthURLProblem(u); why != "" {
		return settings.ShowValue(u) + ": " + why
	}
	return ""
}

// parseAuthHeaders reads a comma separated list of header names: lower
// case, sorted, each once.
func parseAuthHeaders(val string) ([]string, string) {
	var out []string
	for _, f := range strings.Split(val, ",") {
		h := strings.ToLower(strings.TrimSpace(f))
		if h == "" {
			continue
		}
		if !model.ValidHeaderName(h) {
			return nil, settings.ShowValue(f) + " is not a header name"
		}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
		if len(out) > maxAuthHeaders {
			return nil, "more than " + strconv.Itoa(maxAuthHeaders) + " headers"
		}
	}
	slices.Sort(out)
	return out, ""
}

// finish checks the keys together ("" or why the Ingress is refused).
func (a *extAuthAnnotations) finish() string {
	if a.url == "" && a.given != "" {
		return "annotation " + a.given + ": without auth-url there is nobody to ask"
	}
	return ""
}

// model is the Ingress's external authentication (nil without auth-url).
func (a *extAuthAnnotations) model() *model.ExtAuth {
	if a.url == "" {
		return nil
	}
	m := a.method
	if m == "" {
		m = "GET"
	}
	return &model.ExtAuth{Method: m, URL: a.url, Headers: a.headers, SignIn: a.signin}
}

// clusterWarning says why a's auth URL may not be reached ("" when
// nothing does): HAProxy resolves its host with its own resolvers (the
// nameservers of its host's resolv.conf), where a cluster Service name
// (NAME.NAMESPACE.svc, .svc.cluster.local) resolves only when that is the
// cluster's DNS. Requests are then answered 500 (fail closed).
func clusterWarning(a *model.ExtAuth) string {
	if a == nil {
		return ""
	}
	p, err := url.Parse(a.URL)
	if err != nil {
		return ""
	}
	h := strings.TrimSuffix(strings.ToLower(p.Hostname()), ".")
	if !strings.HasSuffix(h, ".svc") && !strings.Contains(h, ".svc.") {
		return ""
	}
	return "auth-url host " + strconv.Quote(h) + " is a cluster Service name: HAProxy resolves it with the nameservers of its own host " +
		"(resolv.conf), not through the cluster; unless those answer for the cluster, every request is answered 500. " +
		"Name an address or a host HAProxy's resolvers know"
}
