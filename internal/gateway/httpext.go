package gateway

import (
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The extended HTTPRoute features (issue 34) the compiler takes, beside
// httproute.go's core: query parameter matches, ResponseHeaderModifier,
// URLRewrite (hostname, path), a RequestRedirect's path, a backendRef's
// own RequestHeaderModifier, and a rule's timeouts. What they become is
// model.HTTPActionExt (map data, render/httpext.go).

// checkQuery checks a match's query parameter matches: Exact, a name of
// URL characters (it becomes an argument of the configuration) and a
// value of the match map.
func checkQuery(qs []gwv1.HTTPQueryParamMatch) string {
	for _, q := range qs {
		if q.Type != nil && *q.Type != gwv1.QueryParamMatchExact {
			return "query parameter match type " + string(*q.Type) + " is not supported (Exact)"
		}
		if !model.ValidQueryName(string(q.Name)) {
			return "query parameter name " + strconv.Quote(string(q.Name)) + " is not supported (letters, digits, - . _ ~)"
		}
		if !model.ValidHeaderValue(q.Value) {
			return "query parameter value " + strconv.Quote(q.Value) + " has spaces, control characters or one of % # \\ \" ' | ;"
		}
	}
	return ""
}

// checkHeaderFilter checks a header modifier's names and values.
func checkHeaderFilter(m *gwv1.HTTPHeaderFilter) string {
	for _, h := range slices.Concat(m.Set, m.Add) {
		if !model.ValidHeaderName(strings.ToLower(string(h.Name))) {
			return "header name " + strconv.Quote(string(h.Name)) + " is not a valid token"
		}
		if h.Value == "" || !model.ValidHeaderValue(h.Value) {
			return "header value " + strconv.Quote(h.Value) + " is empty or has spaces, control characters or one of % # \\ \" ' | ;"
		}
	}
	for _, n := range m.Remove {
		if !model.ValidHeaderName(strings.ToLower(n)) {
			return "header name " + strconv.Quote(n) + " is not a valid token"
		}
	}
	return ""
}

// checkPathModifier checks a rewrite's or a redirect's path against the
// rule's matches: a valid path, and a prefix replaced only for PathPrefix
// matches of at most model.RewriteDepth segments.
func checkPathModifier(p *gwv1.HTTPPathModifier, matches []gwv1.HTTPRouteMatch) string {
	switch p.Type {
	case gwv1.FullPathHTTPPathModifier:
		if p.ReplaceFullPath == nil || !model.ValidHTTPPath(*p.ReplaceFullPath) {
			return "path.replaceFullPath is not an absolute path of URL characters"
		}
	case gwv1.PrefixMatchHTTPPathModifier:
		if p.ReplacePrefixMatch == nil || !model.ValidHTTPPath(*p.ReplacePrefixMatch) {
			return "path.replacePrefixMatch is not an absolute path of URL characters"
		}
		for _, m := range matchesOf(gwv1.HTTPRouteRule{Matches: matches}) {
			r := compileMatch(m, 0)
			if r.PathType != model.PathPrefix {
				return "path.replacePrefixMatch needs PathPrefix matches"
			}
			if model.PrefixSegments(r.Path) > model.RewriteDepth {
				return "path.replacePrefixMatch: a prefix of more than " + strconv.Itoa(model.RewriteDepth) + " segments is not supported"
			}
		}
	default:
		return "path modifier type " + string(p.Type) + " is not supported"
	}
	return ""
}

// checkExtFilter checks the filters of the extended features ("" and
// false when f is none of them).
func checkExtFilter(f gwv1.HTTPRouteFilter, matches []gwv1.HTTPRouteMatch) (string, bool) {
	switch f.Type {
	case gwv1.HTTPRouteFilterResponseHeaderModifier:
		if f.ResponseHeaderModifier == nil {
			return "responseHeaderModifier is missing", true
		}
		return checkHeaderFilter(f.ResponseHeaderModifier), true
	case gwv1.HTTPRouteFilterURLRewrite:
		u := f.URLRewrite
		switch {
		case u == nil:
			return "urlRewrite is missing", true
		case u.Hostname != nil && (!model.ValidSNI(string(*u.Hostname)) || strings.HasPrefix(string(*u.Hostname), "*")):
			return "urlRewrite.hostname is not a valid host name", true
		case u.Path != nil:
			if why := checkPathModifier(u.Path, matches); why != "" {
				return "urlRewrite." + why, true
			}
		}
		return "", true
	case gwv1.HTTPRouteFilterCORS:
		_, why := corsPolicy(f.CORS) // cors.go
		return why, true
	}
	return "", false
}

// checkBackendFilters checks a backendRef's filters: request header
// changes only.
func checkBackendFilters(fs []gwv1.HTTPRouteFilter) string {
	for _, f := range fs {
		if f.Type != gwv1.HTTPRouteFilterRequestHeaderModifier || f.RequestHeaderModifier == nil {
			return "filter type " + string(f.Type) + " on a backendRef is not supported (RequestHeaderModifier)"
		}
		if why := checkHeaderFilter(f.RequestHeaderModifier); why != "" {
			return why
		}
	}
	return ""
}

// ruleTimeout is a rule's timeout: the shorter of request and
// backendRequest that is set and not zero (zero: none, the backend's
// own). A duration that does not parse is an error.
func ruleTimeout(t *gwv1.HTTPRouteTimeouts) (time.Duration, string) {
	if t == nil {
		return 0, ""
	}
	var out time.Duration
	for _, d := range []*gwv1.Duration{t.Request, t.BackendRequest} {
		if d == nil {
			continue
		}
		v, err := time.ParseDuration(string(*d))
		if err != nil || v < 0 {
			return 0, "timeout " + strconv.Quote(string(*d)) + " is not a duration"
		}
		if v > 0 && (out == 0 || v < out) {
			out = v
		}
	}
	return out, ""
}

// headerMods are a header modifier's changes, names in lower case.
func headerMods(m *gwv1.HTTPHeaderFilter) model.HeaderMods {
	var out model.HeaderMods
	for _, h := range m.Set {
		out.Set = append(out.Set, model.HeaderValue{Name: strings.ToLower(string(h.Name)), Value: h.Value})
	}
	for _, h := range m.Add {
		out.Add = append(out.Add, model.HeaderValue{Name: strings.ToLower(string(h.Name)), Value: h.Value})
	}
	for _, n := range m.Remove {
		out.Remove = append(out.Remove, strings.ToLower(n))
	}
	return out
}

// pathRewrite is a path modifier (checked) as the model's.
func pathRewrite(p *gwv1.HTTPPathModifier) *model.PathRewrite {
	if p.Type == gwv1.PrefixMatchHTTPPathModifier && p.ReplacePrefixMatch != nil {
		return &model.PathRewrite{Replace: *p.ReplacePrefixMatch, Prefix: true}
	}
	if p.ReplaceFullPath != nil {
		return &model.PathRewrite{Replace: *p.ReplaceFullPath}
	}
	return nil
}

// actionExt is a rule's extended features (nil: none of them).
func actionExt(rule gwv1.HTTPRouteRule) *model.HTTPActionExt {
	var x model.HTTPActionExt
	for _, f := range rule.Filters {
		switch {
		case f.Type == gwv1.HTTPRouteFilterResponseHeaderModifier && f.ResponseHeaderModifier != nil:
			x.Response = headerMods(f.ResponseHeaderModifier)
		case f.Type == gwv1.HTTPRouteFilterURLRewrite && f.URLRewrite != nil:
			if f.URLRewrite.Hostname != nil {
				x.Host = string(*f.URLRewrite.Hostname)
			}
			if f.URLRewrite.Path != nil {
				x.Path = pathRewrite(f.URLRewrite.Path)
			}
		case f.Type == gwv1.HTTPRouteFilterRequestRedirect && f.RequestRedirect != nil && f.RequestRedirect.Path != nil:
			x.Path = pathRewrite(f.RequestRedirect.Path)
		case f.Type == gwv1.HTTPRouteFilterCORS:
			x.CORS, _ = corsPolicy(f.CORS) // cors.go
		}
	}
	for i, b := range rule.BackendRefs {
		for _, f := range b.Filters {
			if f.Type == gwv1.HTTPRouteFilterRequestHeaderModifier && f.RequestHeaderModifier != nil {
				for len(x.BackendMods) <= i {
					x.BackendMods = append(x.BackendMods, model.HeaderMods{})
				}
				m := headerMods(f.RequestHeaderModifier)
				x.BackendMods[i].Set = append(x.BackendMods[i].Set, m.Set...)
				x.BackendMods[i].Add = append(x.BackendMods[i].Add, m.Add...)
				x.BackendMods[i].Remove = append(x.BackendMods[i].Remove, m.Remove...)
			}
		}
	}
	x.Timeout, _ = ruleTimeout(rule.Timeouts)
	if x.Response.Empty() && len(x.BackendMods) == 0 && x.Path == nil && x.Host == "" && x.Timeout == 0 && x.CORS == nil {
		return nil
	}
	return &x
}

// forMatch is action a as it serves match m: a prefix replaced strips
// the segments of m's own prefix.
func forMatch(a model.HTTPAction, m model.HTTPRule) model.HTTPAction {
	if a.Ext == nil || a.Ext.Path == nil || !a.Ext.Path.Prefix {
		return a
	}
	x := *a.Ext
	p := *x.Path
	p.Strip = model.PrefixSegments(m.Path)
	x.Path = &p
	a.Ext = &x
	return a
}

// eachWeighted are the backends of refs one for one, in their order (a
// backend named twice is twice there), for backendRefs with header
// changes of their own (model.HTTPActionExt.BackendMods by index).
func eachWeighted(refs []resolvedRef, w *world, backends map[string]*model.Backend) []model.WeightedBackend {
	out := make([]model.WeightedBackend, 0, len(refs))
	for _, rr := range refs {
		weight := rr.weight
		rr.weight = max(rr.weight, 1)
		b := weighted([]resolvedRef{rr}, w, backends, true)[0]
		b.Weight = max(weight, 0)
		out = append(out, b)
	}
	return out
}

// h2c reports a Service port whose servers speak HTTP/2 in clear
// (appProtocol kubernetes.io/h2c); kubernetes.io/ws needs nothing: HTTP
// backends pass WebSocket upgrades through.
func h2c(p corev1.ServicePort) bool {
	return p.AppProtocol != nil && *p.AppProtocol == "kubernetes.io/h2c"
}

// listenerHosts are the hostnames of a TLS frontend's listeners, each
// once (model.AnyHost for a listener without), for misdirected requests.
func listenerHosts(ls []*listener) []string {
	var out []string
	for _, l := range ls {
		h := l.hostname
		if h == "" {
			h = model.AnyHost
		}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}
