package ingress

import (
	"slices"
	"strconv"
	"strings"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// HAProxy Ingress's oauth (oauth: oauth2_proxy, with oauth-uri-prefix and
// oauth-headers) is its auth-url family with settings of its own, read
// into the same model.ExtAuth and asked by the same Lua action: each
// request is first asked of oauth2-proxy's PREFIX/auth (HEAD, with every
// client header) on the Service that the Ingress's own path PREFIX names;
// a 2xx serves it with the oauth-headers of the answer set on the request,
// any other answer (or none) is a 302 to PREFIX/start?rd=<the path>; the
// PREFIX path itself, oauth2-proxy's sign-in, is served unasked.

// oauthDefaultPrefix and oauthDefaultHeaders are HAProxy Ingress's
// defaults.
const oauthDefaultPrefix = "/oauth2"

var oauthDefaultHeaders = []string{"x-auth-request-email"}

// oauthAnnotations are the oauth keys, checked.
type oauthAnnotations struct {
	on      bool     // oauth: oauth2_proxy
	prefix  string   // oauth-uri-prefix, without its trailing '/'; "": the default
	headers []string // oauth-headers, lower case, sorted; nil: the default
	headSet bool     // oauth-headers given
	given   string   // a key given without oauth
}

// parseOAuth reads HAProxy Ingress's oauth key name into o: done is false
// for the others.
func (o *oauthAnnotations) parseOAuth(name, val string) (why string, done bool) {
	switch name {
	case "oauth":
		if val != "oauth2_proxy" && val != "oauth2-proxy" {
			return settings.ShowValue(val) + " is not oauth2_proxy (or oauth2-proxy), the only implementation HAProxy Ingress has", true
		}
		o.on = true
		return "", true
	case "oauth-uri-prefix":
		p := strings.TrimRight(val, "/")
		if p == "" {
			return settings.ShowValue(val) + ": the prefix would be every path, and every request served unauthenticated", true
		}
		if !strings.HasPrefix(p, "/") || !model.ValidHTTPPath(p) || strings.ContainsAny(p, "?$%") {
			return settings.ShowValue(val) + " is not an absolute path of URL characters", true
		}
		o.prefix = p
	case "oauth-headers":
		hs, why := oauthHeaders(val)
		if why != "" {
			return why, true
		}
		o.headers, o.headSet = hs, true
	default:
		return "", false
	}
	if o.given == "" {
		o.given = HAProxyPrefix + name
	}
	return "", true
}

// oauthHeaders reads oauth-headers: comma separated HEADER or
// HEADER:SOURCE items. HAProxy Ingress sets HEADER from SOURCE: a header
// of oauth2-proxy's answer, or a HAProxy variable. The answer's headers
// are served (SOURCE a header name, or the variable HAProxy Ingress's Lua
// keeps it in, req.auth_response_header.NAME with '_' for '-'), as the
// model's NAME:SOURCE (model.ValidExtAuthHeader); any other variable
// refuses the Ingress rather than being approximated.
func oauthHeaders(val string) ([]string, string) {
	var out []string
	set := map[string]string{} // HEADER -> its SOURCE
	for _, item := range strings.Split(val, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		h, src, renamed := strings.Cut(item, ":")
		h = strings.ToLower(h)
		if !model.ValidHeaderName(h) {
			return nil, settings.ShowValue(item) + ": " + settings.ShowValue(h) + " is not a header name"
		}
		from := h
		if renamed {
			var why string
			if from, why = oauthSource(src); why != "" {
				return nil, settings.ShowValue(item) + ": " + why
			}
		}
		if prev, ok := set[h]; ok {
			if prev != from {
				return nil, settings.ShowValue(item) + ": header " + h + " is given two sources"
			}
			continue
		}
		set[h] = from
		e := h
		if from != h {
			e = h + ":" + from
		}
		out = append(out, e)
		if len(out) > maxAuthHeaders {
			return nil, "more than " + strconv.Itoa(maxAuthHeaders) + " headers"
		}
	}
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out, ""
}

// oauthAnswerVar is the prefix of the variables HAProxy Ingress's Lua
// sets from the auth server's answer headers (their names lower case,
// each character other than a letter or digit '_').
const oauthAnswerVar = "req.auth_response_header."

// oauthSource is the answer's header an oauth-headers SOURCE names
// (lower case), or why it is not served.
func oauthSource(src string) (string, string) {
	s := strings.ToLower(src)
	if v, ok := strings.CutPrefix(s, oauthAnswerVar); ok {
		h := strings.ReplaceAll(v, "_", "-")
		if v == "" || strings.Trim(v, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" || !model.ValidHeaderName(h) {
			return "", settings.ShowValue(src) + " is not " + oauthAnswerVar + "NAME (letters, digits, '_')"
		}
		return h, ""
	}
	for _, scope := range []string{"proc.", "sess.", "txn.", "req.", "res."} {
		if strings.HasPrefix(s, scope) {
			return "", "the HAProxy variable " + settings.ShowValue(src) + " is not served (only the answer's headers, " + oauthAnswerVar + "NAME)"
		}
	}
	if !model.ValidHeaderName(s) {
		return "", settings.ShowValue(src) + " is not a header name"
	}
	return s, ""
}

// finish checks the oauth keys beside auth-url's ("" or why the Ingress
// is refused); ignored is a Warning to report: auth-url given with oauth
// has precedence (HAProxy Ingress's meaning).
func (o *oauthAnnotations) finish(ext *extAuthAnnotations) (why, ignored string) {
	switch {
	case !o.on && o.given != "":
		return "annotation " + o.given + ": without " + HAProxyPrefix + "oauth there is nothing it configures", ""
	case o.on && ext.url != "":
		return "", "annotation " + HAProxyPrefix + "oauth is ignored: auth-url is given and has precedence (as in HAProxy Ingress)"
	case o.on && ext.nginx:
		return "annotation " + HAProxyPrefix + "oauth: mixed with ingress-nginx's external authentication keys: whose meaning applies is ambiguous", ""
	}
	return "", ""
}

// uriPrefix is the prefix in use.
func (o *oauthAnnotations) uriPrefix() string {
	if o.prefix == "" {
		return oauthDefaultPrefix
	}
	return o.prefix
}

// isPrefix reports whether an Ingress path value is the prefix's own
// (served by oauth2-proxy unasked).
func (o *oauthAnnotations) isPrefix(value string) bool {
	return o.on && strings.TrimRight(value, "/") == o.uriPrefix()
}

// service is the backend of the Ingress's own path for the prefix, or
// nil and why the Ingress is refused: HAProxy Ingress asks oauth2-proxy
// on the Service that path names.
func (o *oauthAnnotations) service(ing *netv1.Ingress) (*netv1.IngressBackend, string, string) {
	for ri, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for pi, p := range r.HTTP.Paths {
			if o.isPrefix(p.Path) && p.Backend.Service != nil {
				return &p.Backend, "spec.rules[" + strconv.Itoa(ri) + "].http.paths[" + strconv.Itoa(pi) + "].backend", ""
			}
		}
	}
	return nil, "", "annotation " + HAProxyPrefix + "oauth: no path " + o.uriPrefix() + " of this Ingress names oauth2-proxy's Service (oauth-uri-prefix)"
}

// model is the external authentication oauth asks with: the URL's host
// the Service's cluster name (the Host sent; the request goes through
// backend, the prefix path's own), SignIn relative to the request's host.
func (o *oauthAnnotations) model(b *netv1.IngressBackend, ns, backend string) *model.ExtAuth {
	host := "http://" + b.Service.Name + "." + ns + ".svc"
	if n := b.Service.Port.Number; n > 0 {
		host += ":" + strconv.Itoa(int(n))
	}
	hs := o.headers
	if !o.headSet {
		hs = oauthDefaultHeaders
	}
	if len(hs) == 0 {
		hs = nil
	}
	p := o.uriPrefix()
	return &model.ExtAuth{Method: "HEAD", URL: host + p + "/auth", Headers: slices.Clone(hs), SignIn: p + "/start?rd=$uri", Backend: backend,
		Fail: []string{model.ExtAuthNone}, SignInAny: true}
}
