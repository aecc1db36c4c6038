package ingress

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	netv1 "k8s.io/api/networking/v1"

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
	// HAProxy Ingress's keys (hiextauth.go)
	hi               bool             // its keys given
	nginx            bool             // ingress-nginx's keys given
	sameNS           string           // svc://NAME:PORT/...: NAME, url the rest after NAME.NAMESPACE
	send, pass, fail []string         // auth-headers-request, -succeed, -fail
	oauth            oauthAnnotations // oauth and its keys (oauth.go)
}

// parseExtAuth reads an external authentication key (name without its
// prefix, ingress-nginx's only) into a: done is false for the others.
func (a *extAuthAnnotations) parseExtAuth(key, name, val string) (why string, done bool) {
	if !strings.HasPrefix(key, NginxPrefix) {
		return a.parseHIExtAuth(name, val) // hiextauth.go
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
	a.nginx = true
	if name != "auth-url" && a.given == "" {
		a.given = key
	}
	return "", true
}

// extAuthURLProblem is model.ExtAuthURLProblem, naming the value. nginx
// variables ($host, $escaped_request_uri, ...: model.ExtAuthVars) stay in
// the URL, expanded by the Lua action from each request.
func extAuthURLProblem(u string) string {
	if why := model.ExtAuthURLProblem(u); why != "" {
		return settings.ShowValue(u) + ": " + why
	}
	return ""
}

// parseAuthHeaders reads a comma separated list of header names: lower
// case, sorted, each once.
func parseAuthHeaders(val string) ([]string, string) {
	out, why := headerList(val, model.ValidHeaderName, " is not a header name")
	slices.Sort(out)
	return out, why
}

// headerList reads a comma separated list of lower-cased names, each
// valid and once, in order, at most maxAuthHeaders; empty items (and
// model.ExtAuthNone) skipped. bad completes what an invalid one is said
// to be.
func headerList(val string, valid func(string) bool, bad string) ([]string, string) {
	var out []string
	for _, f := range strings.Split(val, ",") {
		h := strings.ToLower(strings.TrimSpace(f))
		if h == "" || h == model.ExtAuthNone {
			continue
		}
		if !valid(h) {
			return nil, settings.ShowValue(f) + bad
		}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
		if len(out) > maxAuthHeaders {
			return nil, "more than " + strconv.Itoa(maxAuthHeaders) + " headers"
		}
	}
	return out, ""
}

// finish checks the keys together ("" or why the Ingress is refused).
func (a *extAuthAnnotations) finish() string {
	if a.url == "" && a.given != "" {
		return "annotation " + a.given + ": without auth-url there is nobody to ask"
	}
	if a.hi && a.nginx {
		return "annotation " + HAProxyPrefix + "auth-url: the external authentication keys of ingress-nginx and HAProxy Ingress mixed: whose meaning applies is ambiguous"
	}
	why, _ := a.oauth.finish(a) // oauth.go
	return why
}

// urlKey is the auth-url key given.
func (a *extAuthAnnotations) urlKey() string {
	if a.hi {
		return HAProxyPrefix + "auth-url"
	}
	return NginxPrefix + "auth-url"
}

// model is the Ingress's external authentication in namespace ns (nil
// without auth-url).
func (a *extAuthAnnotations) model(ns string) *model.ExtAuth {
	if a.url == "" {
		return nil
	}
	m := a.method
	if m == "" {
		m = "GET"
	}
	x := &model.ExtAuth{Method: m, URL: a.url, Headers: a.headers, SignIn: a.signin}
	if a.sameNS != "" {
		x.URL = "http://" + a.sameNS + "." + ns + a.url
	}
	if a.hi {
		a.hiModel(x) // hiextauth.go
	}
	return x
}

// authService is the Service an auth URL names (nil when it names
// none), its namespace and, for an https URL, the TLS to its servers:
// http[s]://NAME.NAMESPACE.svc[.cluster.local][:PORT]/..., reached
// through HAProxy's own backend of it (port 80 when none is given, 443
// over https), in the Ingress's namespace ns or another one:
// ingress-nginx reaches any namespace's Service by the cluster's DNS, and
// oauth2-proxy usually runs in a namespace of its own. Over https the
// backend speaks TLS to the servers as ingress-nginx's auth location
// does by default: the URL's host sent as SNI (its proxy_ssl_server_name
// on), the server's certificate not verified (nginx's proxy_ssl_verify
// off). why says why a host is not served that way: one that is not
// NAME.NAMESPACE.svc (HAProxy then resolves it with its own resolvers,
// the nameservers of its host's resolv.conf, which answer for the
// cluster only if they are its DNS; requests are answered 500 when it
// does not resolve).
func authService(u, ns string) (b *netv1.IngressBackend, sns string, t *model.BackendTLS, why string) {
	p, err := url.Parse(u)
	if err != nil {
		return nil, "", nil, ""
	}
	host := strings.TrimSuffix(strings.ToLower(p.Hostname()), ".")
	h, ok := strings.CutSuffix(host, ".svc.cluster.local")
	if !ok {
		if h, ok = strings.CutSuffix(host, ".svc"); !ok {
			return nil, "", nil, ""
		}
	}
	name, sns, ok := strings.Cut(h, ".")
	port := 80
	if p.Scheme == "https" {
		port = 443
	}
	if pt := p.Port(); pt != "" {
		port, _ = strconv.Atoi(pt) // checked by model.ExtAuthURLProblem
	}
	if !ok || name == "" || sns == "" || strings.Contains(sns, ".") {
		return nil, "", nil, "auth-url host " + strconv.Quote(p.Hostname()) + " is not NAME.NAMESPACE.svc: HAProxy resolves it with the nameservers " +
			"of its own host (resolv.conf), not through the cluster; unless those answer for the cluster, every request is answered 500"
	}
	if p.Scheme == "https" {
		t = &model.BackendTLS{SNI: host, NoVerify: true}
	}
	return &netv1.IngressBackend{Service: &netv1.IngressServiceBackend{Name: name, Port: netv1.ServiceBackendPort{Number: int32(port)}}}, sns, t, ""
}
