package model

import (
	"regexp"
	"slices"
	"strings"
)

// HTTP is an HTTP frontend's routing table (Gateway API HTTPRoutes today,
// Ingress later): a frontend with HTTP set speaks HTTP and picks each
// request's action from map files that fixed rules read (render/http.go),
// so the table is data, changed at runtime, and only the header names in
// it are structure (each is a rule of the configuration).
//
// The producer orders everything: Hosts by nothing in particular, each
// host's Rules in the order they take precedence (the first that matches
// a request wins). A host's Rules are all the rules that may serve a
// request for it, those of less specific hostnames included: a request
// is matched against the most specific host only.
type HTTP struct {
	Hosts   []HTTPHost
	Actions []HTTPAction // HTTPRule.Action indexes it
	// Port is the listener's port, for redirects that keep it.
	Port uint16

	// Listeners are the hostnames of a TLS frontend's listeners (AnyHost
	// for one without): a request whose Host picks another listener than
	// its connection's server name did is misdirected (httpext.go).
	Listeners []string
	// Passthrough, on a frontend that terminates TLS: the server names
	// not terminated (passthrough.go); nil: none.
	Passthrough *Passthrough

	// shape is the table's structure data as Hosts and Actions give it
	// (httpshape.go), kept by its producer: the compilers' memos keep it
	// from pass to pass (the gateway's table memo, the Ingress pass memo:
	// SetShape), a whole build computes it once (Shaped). The methods
	// that answer from it (HeaderSets, ModifiedHeaders, ResponseHeaders,
	// BackendHeaders, HasAccess, SameShape) walk the table
	// only when it has none (nil: the zero value and a table built by
	// hand are valid, and answer the same). Equal ignores it.
	shape *HTTPShape
}

// HTTPHost is one host name of the table: an exact name ("a.example.com"),
// a wildcard ("*.example.com": one label or more before the suffix, a
// Gateway's), a one-label wildcard ("+.example.com", OneLabel: exactly one
// label before the suffix, an Ingress's), or AnyHost. Lower case, checked
// by ValidHTTPHost.
type HTTPHost struct {
	Name  string
	Rules []HTTPRule
}

// AnyHost is the host of the rules that serve every host name no other
// HTTPHost of the table takes.
const AnyHost = "*"

// OneLabelPrefix starts a table's one-label wildcard: "+.example.com"
// takes bar.example.com, not baz.bar.example.com nor example.com, as the
// Ingress spec defines "*.example.com" (a Gateway's "*.example.com" takes
// one label or more: the Gateway API's).
const OneLabelPrefix = "+."

// OneLabel is the table's name of an Ingress host: a wildcard "*.x" as
// the one-label "+.x", any other name as it is.
func OneLabel(host string) string {
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		return OneLabelPrefix + rest
	}
	return host
}

// ValidHTTPHost reports whether name may be an HTTPHost's: AnyHost, a
// ValidSNI name, or a one-label wildcard of a valid suffix.
func ValidHTTPHost(name string) bool {
	if rest, ok := strings.CutPrefix(name, OneLabelPrefix); ok {
		return ValidSNI("*." + rest)
	}
	return name == AnyHost || ValidSNI(name)
}

// Path match kinds.
const (
	PathExact  = "Exact"
	PathPrefix = "PathPrefix" // element-wise: /foo takes /foo and /foo/bar, not /foobar
)

// HTTPRule is one way to match a request and what to do with it.
type HTTPRule struct {
	PathType string // PathExact or PathPrefix
	Path     string // ValidHTTPPath; a prefix's trailing "/" is ignored
	Headers  []HeaderMatch
	Method   string // "": any; else ValidMethod
	Action   int    // index in HTTP.Actions
	// Query are query parameters that must carry exactly Value (the
	// first occurrence, as sent: not decoded); Name is case-sensitive,
	// ValidQueryName (httpext.go).
	Query []HeaderMatch
}

// MethodMatch stands for the request's method among a rule's header
// names (HeaderSets): a method is matched as a header is.
const MethodMatch = ":method"

// ValidMethod reports whether m may be an HTTPRule's Method: upper-case
// letters.
func ValidMethod(m string) bool {
	return m != "" && len(m) <= 16 && strings.Trim(m, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == ""
}

// MatchNames are r's header names, MethodMatch first when it matches a
// method, then sorted, each once.
func (r HTTPRule) MatchNames() []string {
	return r.appendMatchNames(make([]string, 0, len(r.Headers)+len(r.Query)+1))
}

// AppendMatchNames appends MatchNames to names (its length zero).
func (r HTTPRule) AppendMatchNames(names []string) []string { return r.appendMatchNames(names) }

func (r HTTPRule) appendMatchNames(names []string) []string {
	for _, m := range r.Headers {
		names = append(names, m.Name)
	}
	if r.Method != "" {
		names = append(names, MethodMatch)
	}
	for _, q := range r.Query {
		names = append(names, QueryMatch+q.Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// HeaderMatch is a request header that must carry exactly Value (the last
// occurrence of the header, the whole line). Name is lower case.
type HeaderMatch struct {
	Name, Value string
}

// HTTPAction is what happens to a request a rule matched: a redirect, or
// the header changes and then a backend chosen by weight.
type HTTPAction struct {
	// Backends share the requests in proportion to their weights;
	// RejectBackend's share is answered 500, no backend at all 500.
	Backends []WeightedBackend
	Redirect *Redirect
	Set      []HeaderValue // request headers replaced
	Add      []HeaderValue // request headers added
	Remove   []string      // request headers removed (lower case)

	// Ext are the extended features (httpext.go); nil: none.
	Ext *HTTPActionExt
	// Access restricts who the action serves (httpaccess.go); nil: all.
	Access *HTTPAccess
}

// HeaderValue is a header's name (lower case) and value.
type HeaderValue struct {
	Name, Value string
}

// Redirect answers a request with a redirect to Scheme://Host[:Port] and
// the request's path. Empty Scheme or Host: the request's; Port 0: none
// written (the scheme's own). StripSlash drops one '/' that ends the
// request's path and query (ingress-nginx's HTTPS redirect without
// preserve-trailing-slash: /a/ to /a, / to the empty path).
type Redirect struct {
	Scheme     string // "", "http" or "https"
	Host       string // ValidSNI, no wildcard
	Port       uint16
	Code       int // 301 or 302 (RedirectCodes)
	StripSlash bool
}

// RedirectCodes are the status codes a Redirect may carry.
var RedirectCodes = []int{301, 302, 303, 307, 308}

// httpPath is an absolute path of characters that are neither HAProxy
// syntax, map separators nor the Runtime API's: RFC 3986's unreserved
// and sub-delims but ';' and the quote, ':' '@' '/', and percent-encoded
// octets. No space, '#', backslash, ';', quote or control character.
var httpPath = regexp.MustCompile(`^/([A-Za-z0-9\-._~!$&()*+,=:@/]|%[0-9A-Fa-f]{2})*$`)

// ValidHTTPPath reports whether p may be an HTTPRule's Path.
func ValidHTTPPath(p string) bool {
	return len(p) <= 1024 && httpPath.MatchString(p)
}

// headerName is an HTTP token (RFC 9110), lower case, without the
// token characters HAProxy or a map would read ('#', quotes, '|').
var headerName = regexp.MustCompile(`^[a-z0-9!$&*+\-.^_~]{1,128}$`)

// ValidHeaderName reports whether n may be a header name of the table:
// it becomes a word of the configuration, so no HAProxy syntax either
// ('#', quotes).
func ValidHeaderName(n string) bool {
	return headerName.MatchString(n)
}

// ValidHeaderValue reports whether v may be a header value of the table:
// visible ASCII without '%', '#', '\\', quotes, '|' (a map key's
// separator) or ';' (the Runtime API's), no space: it becomes a map key
// or value.
func ValidHeaderValue(v string) bool {
	if len(v) > 1024 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("%#\\\"'|;", c) >= 0 {
			return false
		}
	}
	return true
}

// ValidHeaderSetValue reports whether v may be the value of a header
// set or added (HeaderMods.Set, Add): looser than ValidHeaderValue, as
// such a value is only ever the value of a map entry, never a key, a
// word of the configuration or a format. A map file's value is the rest
// of its line after the key, its ends trimmed, and the Runtime API
// reads a space and ';' escaped with a backslash (runtimeapi.CLIValue);
// quotes are plain characters to both (HAProxy 2.6, 3.0 and 3.4: see
// docs/ingress.md, custom-headers). So spaces inside, ';' and quotes
// are allowed (`max-age=31536000; includeSubDomains`,
// `default-src 'self'`); a space at either end, a control character,
// '%', '#', a backslash, '|' and anything beyond ASCII are not.
func ValidHeaderSetValue(v string) bool {
	if len(v) > 1024 || strings.TrimSpace(v) != v {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < ' ' || c >= 0x7f || strings.IndexByte("%#\\|", c) >= 0 {
			return false
		}
	}
	return true
}

// HeaderSets are the distinct sets of header names the table's rules
// match on (MethodMatch for a method), each sorted, the empty set first: the structure of the
// matching rules (render/http.go writes one lookup per set).
func (h *HTTP) HeaderSets() [][]string { return h.shapeOf().HeaderSets }

// headerSets is HeaderSets walked from the hosts' rules (ShapeOf).
func (h *HTTP) headerSets() [][]string {
	out := [][]string{{}}
	var names []string // one rule's, reused: a set is copied only when new
	has := func(s []string) bool { return slices.Equal(s, names) }
	for _, host := range h.Hosts {
		for _, r := range host.Rules {
			names = r.appendMatchNames(names[:0])
			if !slices.ContainsFunc(out, has) {
				out = append(out, slices.Clone(names))
			}
		}
	}
	SortHeaderSets(out[1:])
	return out
}

// SortHeaderSets sorts sets as HeaderSets orders them after the empty set.
func SortHeaderSets(sets [][]string) {
	slices.SortFunc(sets, func(a, b []string) int { return strings.Compare(strings.Join(a, ","), strings.Join(b, ",")) })
}

// ModifiedHeaders are the header names the actions set, add or remove,
// sorted: a rule of the configuration each.
func (h *HTTP) ModifiedHeaders() []string { return h.shapeOf().Modified }

// modifiedHeaders is ModifiedHeaders walked from the actions (ShapeOf).
func (h *HTTP) modifiedHeaders() []string {
	var out []string
	for _, a := range h.Actions {
		out = append(out, HeaderMods{Set: a.Set, Add: a.Add, Remove: a.Remove}.Names()...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Equal reports whether h and g are the same table, field by field.
func (h *HTTP) Equal(g *HTTP) bool {
	if h == nil || g == nil {
		return h == g
	}
	return h.Port == g.Port && slices.Equal(h.Listeners, g.Listeners) && h.Passthrough.Equal(g.Passthrough) &&
		slices.EqualFunc(h.Hosts, g.Hosts, func(a, b HTTPHost) bool {
			return a.Name == b.Name && slices.EqualFunc(a.Rules, b.Rules, func(x, y HTTPRule) bool {
				return x.PathType == y.PathType && x.Path == y.Path && x.Action == y.Action && x.Method == y.Method && slices.Equal(x.Headers, y.Headers) && slices.Equal(x.Query, y.Query)
			})
		}) &&
		slices.EqualFunc(h.Actions, g.Actions, func(a, b HTTPAction) bool {
			return slices.Equal(a.Backends, b.Backends) && slices.Equal(a.Set, b.Set) && slices.Equal(a.Add, b.Add) &&
				slices.Equal(a.Remove, b.Remove) && (a.Redirect == nil) == (b.Redirect == nil) && (a.Redirect == nil || *a.Redirect == *b.Redirect) && extEqual(a.Ext, b.Ext) &&
				accessEqual(a.Access, b.Access)
		})
}
