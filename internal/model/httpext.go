package model

import (
	"regexp"
	"slices"
	"strings"
	"time"
)

// The extended HTTP features (Gateway API's extended GATEWAY-HTTP
// conformance, issue 34): query parameter matches (HTTPRule.Query),
// response header changes, a backendRef's own request header changes,
// path and host rewrites, a redirect's path, and a rule's timeout. All of
// it is map data (render/httpext.go), none of it structure but the header
// names changed, as for HTTPAction's own header changes.

// HTTPActionExt is what an HTTPAction does beyond its redirect, request
// header changes and weighted backends.
type HTTPActionExt struct {
	// Response are the response headers changed (set, added, removed).
	Response HeaderMods
	// BackendMods are each backend's own request header changes, in the
	// order of HTTPAction.Backends (index i for Backends[i]); shorter
	// than Backends when the last ones have none.
	BackendMods []HeaderMods
	// Path rewrites the request's path (no Redirect), or is the path of
	// the Redirect.
	Path *PathRewrite
	// Host rewrites the request's Host header ("": kept). ValidSNI, no
	// wildcard.
	Host string
	// Timeout bounds the wait for the backend's answer (HAProxy's server
	// timeout of the request); 0: the backend's own.
	Timeout time.Duration
	// Connect bounds the connection to the backend's server (HAProxy's
	// connect timeout of the request, set per request from 3.4:
	// haproxy.Version.ConnectPerRequest); 0: the backend's own.
	Connect time.Duration
	// CORS is the action's cross-origin policy (cors.go); nil: none.
	CORS *CORS
}

// HeaderMods are header changes: set (replace), add, remove. Names lower
// case (ValidHeaderName), values ValidHeaderSetValue and not empty.
type HeaderMods struct {
	Set, Add []HeaderValue
	Remove   []string
}

// Empty reports whether m changes nothing.
func (m HeaderMods) Empty() bool {
	return len(m.Set) == 0 && len(m.Add) == 0 && len(m.Remove) == 0
}

// Names are the header names m changes, sorted, each once.
func (m HeaderMods) Names() []string {
	var out []string
	for _, v := range m.Set {
		out = append(out, v.Name)
	}
	for _, v := range m.Add {
		out = append(out, v.Name)
	}
	out = append(out, m.Remove...)
	slices.Sort(out)
	return slices.Compact(out)
}

func (m HeaderMods) equal(n HeaderMods) bool {
	return slices.Equal(m.Set, n.Set) && slices.Equal(m.Add, n.Add) && slices.Equal(m.Remove, n.Remove)
}

// PathRewrite replaces a request's path (its query is kept): with
// Prefix, the first Strip segments of the path (those of the prefix the
// rule matched: its count of '/') become Replace (without its trailing
// '/'; "/" when the result is empty); else the whole path becomes
// Replace. Replace is ValidHTTPPath.
type PathRewrite struct {
	Replace string
	Prefix  bool
	Strip   int // 0..RewriteDepth
}

// RewriteDepth is the most segments a prefix replaced by a PathRewrite
// may have: the rules that strip them are fixed, one per count.
const RewriteDepth = 16

// PrefixSegments is the count of segments of a PathPrefix match's path
// (its '/' once trailing ones are dropped): "/" 0, "/a/b/" 2.
func PrefixSegments(p string) int {
	return strings.Count(strings.TrimRight(p, "/"), "/")
}

// QueryMatch stands for query parameter NAME among a rule's match names
// (HeaderSets): QueryMatch + NAME.
const QueryMatch = "?"

// CookieMatch stands for the request's cookie NAME among a rule's match
// names (HeaderSets): CookieMatch + NAME (ValidCookieName), its first
// occurrence's value matched exactly (an Ingress's canary-by-cookie).
const CookieMatch = ":cookie:"

// queryName is a query parameter name that may be written into the
// configuration (an argument of url_param): letters, digits, '-', '.',
// '_', '~'.
var queryName = regexp.MustCompile(`^[A-Za-z0-9._~-]{1,128}$`)

// ValidQueryName reports whether n may be a query parameter's name of
// an HTTPRule's Query (case-sensitive, as the spec says).
func ValidQueryName(n string) bool {
	return queryName.MatchString(n)
}

// extEqual reports whether two actions' extensions are the same.
func extEqual(a, b *HTTPActionExt) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Response.equal(b.Response) &&
		slices.EqualFunc(a.BackendMods, b.BackendMods, HeaderMods.equal) &&
		(a.Path == nil) == (b.Path == nil) && (a.Path == nil || *a.Path == *b.Path) &&
		a.Host == b.Host && a.Timeout == b.Timeout && a.Connect == b.Connect && a.CORS.Equal(b.CORS)
}

// ResponseHeaders are the response header names the actions change,
// sorted: a rule of the configuration each.
func (h *HTTP) ResponseHeaders() []string { return h.shapeOf().Response }

// responseHeaders is ResponseHeaders walked from the actions (ShapeOf).
func (h *HTTP) responseHeaders() []string {
	var out []string
	for _, a := range h.Actions {
		if a.Ext != nil {
			out = append(out, a.Ext.Response.Names()...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// BackendHeaders are the request header names some backend's own
// changes touch, sorted: a rule of the configuration each.
func (h *HTTP) BackendHeaders() []string { return h.shapeOf().Backend }

// backendHeaders is BackendHeaders walked from the actions (ShapeOf).
func (h *HTTP) backendHeaders() []string {
	var out []string
	for _, a := range h.Actions {
		if a.Ext == nil {
			continue
		}
		for _, m := range a.Ext.BackendMods {
			out = append(out, m.Names()...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
