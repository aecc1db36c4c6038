package gateway

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The HTTPRoute compiler: an HTTP listener's attached routes become one
// model.HTTP table (the frontend's maps). The spec's precedence is
// decided here, once, by ordering each host's rules; HAProxy then takes
// the first rule that matches (render/http.go).

// httpRule is one match of one rule of a route, as the listener takes it.
type httpRule struct {
	host    string // the hostname it matches through: exact, "*.x", or model.AnyHost
	rule    model.HTTPRule
	age     int // the route's place among the listener's routes (oldest first, then namespace/name)
	ruleIdx int // the rule's place in its route
	match   int // the match's place in its rule
}

// checkHTTPRoute returns why route r cannot be served ("" when it can):
// the features it uses that are not supported, or text that could carry
// HAProxy syntax or map separators.
func checkHTTPRoute(r *gwv1.HTTPRoute) string {
	for ri, rule := range r.Spec.Rules {
		at := "rules[" + strconv.Itoa(ri) + "]"
		for mi, m := range rule.Matches {
			if why := checkMatch(m); why != "" {
				return at + ".matches[" + strconv.Itoa(mi) + "]: " + why
			}
		}
		for fi, f := range rule.Filters {
			why, ext := checkExtFilter(f, rule.Matches) // httpext.go
			if !ext {
				why = checkFilter(f, rule.Matches)
			}
			if why != "" {
				return at + ".filters[" + strconv.Itoa(fi) + "]: " + why
			}
		}
		for bi, b := range rule.BackendRefs {
			if why := checkBackendFilters(b.Filters); why != "" {
				return at + ".backendRefs[" + strconv.Itoa(bi) + "]: " + why
			}
		}
		if _, why := ruleTimeout(rule.Timeouts); why != "" {
			return at + ".timeouts: " + why
		}
		if why := checkRetry(rule.Retry); why != "" { // retry.go
			return at + ".retry: " + why
		}
	}
	return ""
}

func checkMatch(m gwv1.HTTPRouteMatch) string {
	if p := m.Path; p != nil {
		t := gwv1.PathMatchPathPrefix
		if p.Type != nil {
			t = *p.Type
		}
		if t != gwv1.PathMatchExact && t != gwv1.PathMatchPathPrefix {
			return "path match type " + string(t) + " is not supported (Exact, PathPrefix)"
		}
		if p.Value != nil && !model.ValidHTTPPath(*p.Value) {
			return "path " + strconv.Quote(*p.Value) + " is not an absolute path of URL characters"
		}
	}
	for _, h := range m.Headers {
		if h.Type != nil && *h.Type != gwv1.HeaderMatchExact {
			return "header match type " + string(*h.Type) + " is not supported (Exact)"
		}
		if !model.ValidHeaderName(strings.ToLower(string(h.Name))) {
			return "header name " + strconv.Quote(string(h.Name)) + " is not a valid token"
		}
		if !model.ValidHeaderValue(h.Value) {
			return "header value " + strconv.Quote(h.Value) + " has spaces, control characters or one of % # \\ \" ' | ;"
		}
	}
	if why := checkQuery(m.QueryParams); why != "" {
		return why
	}
	if m.Method != nil && !model.ValidMethod(string(*m.Method)) {
		return "method " + strconv.Quote(string(*m.Method)) + " is not an upper-case token"
	}
	return ""
}

func checkFilter(f gwv1.HTTPRouteFilter, matches []gwv1.HTTPRouteMatch) string {
	switch f.Type {
	case gwv1.HTTPRouteFilterRequestHeaderModifier:
		if f.RequestHeaderModifier == nil {
			return "requestHeaderModifier is missing"
		}
		return checkHeaderFilter(f.RequestHeaderModifier) // httpext.go
	case gwv1.HTTPRouteFilterRequestRedirect:
		rd := f.RequestRedirect
		switch {
		case rd == nil:
			return "requestRedirect is missing"
		case rd.Path != nil && checkPathModifier(rd.Path, matches) != "":
			return "requestRedirect." + checkPathModifier(rd.Path, matches)
		case rd.Scheme != nil && *rd.Scheme != "http" && *rd.Scheme != "https":
			return "requestRedirect.scheme must be http or https"
		case rd.Hostname != nil && (!model.ValidSNI(string(*rd.Hostname)) || strings.HasPrefix(string(*rd.Hostname), "*")):
			return "requestRedirect.hostname is not a valid host name"
		case rd.StatusCode != nil && !slices.Contains(model.RedirectCodes, *rd.StatusCode):
			return "requestRedirect.statusCode is not one of 301, 302, 303, 307, 308"
		}
	default:
		return "filter type " + string(f.Type) + " is not supported (RequestHeaderModifier, ResponseHeaderModifier, RequestRedirect, URLRewrite, CORS)"
	}
	return ""
}

// newTable starts an HTTP frontend's table for listeners ls (sorted
// here, more specific hostnames first) on port, and says its scheme.
func newTable(ls []*listener, port uint16) (*model.HTTP, string) {
	t := &model.HTTP{Port: port}
	scheme := "http"
	if ls[0].tls != nil {
		scheme = "https"
	}
	slices.SortStableFunc(ls, func(a, b *listener) int { return precedence(a.hostname, b.hostname) })
	if scheme == "https" {
		t.Listeners = listenerHosts(ls) // httpext.go
	}
	return t, scheme
}

// httpTable compiles the served routes of an HTTP frontend's listeners
// (ls, on one port) into its table. Listeners with more specific
// hostnames come first and keep a host name two of them give.
func httpTable(ls []*listener, port uint16, w *world, backends map[string]*model.Backend) *model.HTTP {
	t, scheme := newTable(ls, port)
	have := map[string]bool{}
	for _, l := range ls {
		var rules []httpRule
		for age, a := range l.routes {
			if !a.served || a.r.http == nil {
				continue
			}
			f := w.fragment(a, port, scheme, backends) // memo.go
			off := len(t.Actions)
			t.Actions = append(t.Actions, f.actions...)
			for _, fm := range f.matches {
				cm := fm.rule
				cm.Action += off
				for _, h := range a.snis {
					if h == "" {
						h = model.AnyHost
					}
					rules = append(rules, httpRule{host: h, rule: cm, age: age, ruleIdx: fm.ruleIdx, match: fm.match})
				}
			}
		}
		byHost, keys, wild := rulesByHost(rules)
		for _, k := range keys {
			if have[k] {
				continue // a more specific listener's
			}
			have[k] = true
			t.Hosts = append(t.Hosts, hostOf(k, covering(rules, byHost, wild, k)))
		}
	}
	return model.Shaped(t) // a whole build: its shape computed once (the table memo keeps its own)
}

// hostOf is table host k from the rules that serve it: in the spec's
// order, a match that takes k through two of its route's hostnames
// once, at the more specific one. rs is sorted in place.
func hostOf(k string, rs []httpRule) model.HTTPHost {
	slices.SortStableFunc(rs, httpPrecedence)
	host := model.HTTPHost{Name: k, Rules: make([]model.HTTPRule, 0, len(rs))}
	var seen map[matchAt]bool // with more than one rule only
	if len(rs) > 1 {
		seen = make(map[matchAt]bool, len(rs))
	}
	for _, r := range rs {
		if id := (matchAt{r.age, r.ruleIdx, r.match}); seen == nil || !seen[id] {
			if seen != nil {
				seen[id] = true
			}
			host.Rules = append(host.Rules, r.rule)
		}
	}
	return host
}

// compileRoute compiles route r's rules for an HTTP frontend of this
// port and scheme: its actions and matches, their Action relative to
// the route's first action, and the backends they use added to backends.
func compileRoute(r *route, port uint16, scheme string, w *world, backends map[string]*model.Backend) *fragment {
	f := &fragment{}
	for ri, rule := range r.http.Spec.Rules {
		act := len(f.actions)
		base := httpAction(r, rule, port, scheme, w, backends)
		f.actions = append(f.actions, base)
		for mi, m := range matchesOf(rule) {
			cm := compileMatch(m, act)
			if x := forMatch(base, cm); x.Ext != base.Ext && mi == 0 { // httpext.go: a prefix replaced
				f.actions[act] = x
			} else if x.Ext != base.Ext {
				cm.Action = len(f.actions)
				f.actions = append(f.actions, x)
			}
			f.matches = append(f.matches, fragMatch{cm, ri, mi})
		}
	}
	return f
}

// matchAt is a match of a route on a listener: the route's age, the
// rule's and the match's places.
type matchAt struct{ age, rule, match int }

// matchesOf are a rule's matches; none is one that takes every path.
func matchesOf(rule gwv1.HTTPRouteRule) []gwv1.HTTPRouteMatch {
	if len(rule.Matches) == 0 {
		return []gwv1.HTTPRouteMatch{{}}
	}
	return rule.Matches
}

// compileMatch turns a match (checked by checkMatch) into a model rule:
// PathPrefix "/" by default, header names in lower case, the first
// header of a name only (as the spec says).
func compileMatch(m gwv1.HTTPRouteMatch, action int) model.HTTPRule {
	r := model.HTTPRule{PathType: model.PathPrefix, Path: "/", Action: action}
	if p := m.Path; p != nil {
		if p.Type != nil && *p.Type == gwv1.PathMatchExact {
			r.PathType = model.PathExact
		}
		if p.Value != nil {
			r.Path = *p.Value
		}
	}
	if m.Method != nil {
		r.Method = string(*m.Method)
	}
	for _, q := range m.QueryParams {
		if !slices.ContainsFunc(r.Query, func(x model.HeaderMatch) bool { return x.Name == string(q.Name) }) {
			r.Query = append(r.Query, model.HeaderMatch{Name: string(q.Name), Value: q.Value})
		}
	}
	for _, h := range m.Headers {
		n := strings.ToLower(string(h.Name))
		if !slices.ContainsFunc(r.Headers, func(x model.HeaderMatch) bool { return x.Name == n }) {
			r.Headers = append(r.Headers, model.HeaderMatch{Name: n, Value: h.Value})
		}
	}
	return r
}

// httpAction is what a rule does: its redirect, or its header changes
// and its backends by weight (a backendRef that does not resolve: its
// share is answered 500).
func httpAction(r *route, rule gwv1.HTTPRouteRule, port uint16, scheme string, w *world, backends map[string]*model.Backend) model.HTTPAction {
	var a model.HTTPAction
	for _, f := range rule.Filters {
		switch {
		case f.RequestRedirect != nil && f.Type == gwv1.HTTPRouteFilterRequestRedirect:
			a.Redirect = redirect(f.RequestRedirect, port, scheme)
		case f.RequestHeaderModifier != nil && f.Type == gwv1.HTTPRouteFilterRequestHeaderModifier:
			m := headerMods(f.RequestHeaderModifier) // httpext.go
			a.Set, a.Add, a.Remove = append(a.Set, m.Set...), append(a.Add, m.Add...), append(a.Remove, m.Remove...)
		}
	}
	a.Ext = actionExt(rule) // httpext.go
	if a.Redirect != nil {
		rd := model.HTTPAction{Redirect: a.Redirect}
		if a.Ext != nil && a.Ext.Path != nil {
			rd.Ext = &model.HTTPActionExt{Path: a.Ext.Path}
		}
		return rd
	}
	refs := make([]gwv1.BackendRef, len(rule.BackendRefs))
	for i, b := range rule.BackendRefs {
		refs[i] = b.BackendRef
	}
	rr := *r
	rr.refs = refs
	if a.Ext != nil && len(a.Ext.BackendMods) > 0 {
		a.Backends = withRetry(eachWeighted(w.resolve(&rr), w, backends), rule.Retry, backends) // retry.go
		return a
	}
	a.Backends = withRetry(weighted(w.resolve(&rr), w, backends, true), rule.Retry, backends)
	return a
}

// redirect is a RequestRedirect on a listener of this port and scheme:
// the scheme's port is never written; with no scheme and no port given,
// the listener's port is kept.
func redirect(f *gwv1.HTTPRequestRedirectFilter, port uint16, scheme string) *model.Redirect {
	rd := &model.Redirect{Scheme: scheme, Code: 302}
	if f.StatusCode != nil {
		rd.Code = *f.StatusCode
	}
	if f.Hostname != nil {
		rd.Host = string(*f.Hostname)
	}
	switch {
	case f.Port != nil:
		rd.Port = uint16(*f.Port)
	case f.Scheme == nil:
		rd.Port = port
	}
	if f.Scheme != nil {
		rd.Scheme = *f.Scheme
	}
	if (rd.Scheme == "http" && rd.Port == 80) || (rd.Scheme == "https" && rd.Port == 443) {
		rd.Port = 0
	}
	return rd
}

// hostCovers reports whether a rule matching through host h serves
// requests for table host k.
func hostCovers(h, k string) bool {
	switch {
	case h == k || h == model.AnyHost:
		return true
	case k == model.AnyHost:
		return false
	case strings.HasPrefix(h, "*."):
		return strings.HasSuffix(k, h[1:])
	}
	return false
}

// precedenceAny is precedence with model.AnyHost last.
func precedenceAny(a, b string) int {
	if a == model.AnyHost {
		a = ""
	}
	if b == model.AnyHost {
		b = ""
	}
	return precedence(a, b)
}

// httpPrecedence orders the rules of one host as the spec does: the
// most specific hostname, an Exact path, the longest prefix, a method
// match, the most header matches, then the oldest route (namespace/name
// on ties), then the rule's and the match's order.
func httpPrecedence(a, b httpRule) int {
	if c := precedenceAny(a.host, b.host); c != 0 {
		return c
	}
	if ea, eb := a.rule.PathType == model.PathExact, b.rule.PathType == model.PathExact; ea != eb {
		if ea {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(len(strings.TrimRight(b.rule.Path, "/")), len(strings.TrimRight(a.rule.Path, "/"))); c != 0 {
		return c
	}
	if ma, mb := a.rule.Method != "", b.rule.Method != ""; ma != mb {
		if ma {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(len(b.rule.Headers), len(a.rule.Headers)); c != 0 {
		return c
	}
	if c := cmp.Compare(len(b.rule.Query), len(a.rule.Query)); c != 0 {
		return c
	}
	if c := cmp.Compare(a.age, b.age); c != 0 {
		return c
	}
	if c := cmp.Compare(a.ruleIdx, b.ruleIdx); c != 0 {
		return c
	}
	return cmp.Compare(a.match, b.match)
}

// rulesByHost indexes rules by the host they match through: the rules'
// places by host, the hosts in table order (precedenceAny) and the
// wildcard hosts among them. A table host's rules are then found
// through its own name, the wildcards and any host, not by a scan of
// every rule (a scan per host was quadratic in the routes).
func rulesByHost(rules []httpRule) (map[string][]int, []string, []string) {
	byHost := map[string][]int{}
	var keys, wild []string
	for i, r := range rules {
		if _, ok := byHost[r.host]; !ok {
			keys = append(keys, r.host)
			if strings.HasPrefix(r.host, "*.") {
				wild = append(wild, r.host)
			}
		}
		byHost[r.host] = append(byHost[r.host], i)
	}
	slices.SortFunc(keys, precedenceAny)
	return byHost, keys, wild
}

// covering are the rules that serve table host k (hostCovers), in the
// order of rules.
func covering(rules []httpRule, byHost map[string][]int, wild []string, k string) []httpRule {
	at := slices.Clone(byHost[k])
	if k != model.AnyHost {
		at = append(at, byHost[model.AnyHost]...)
		for _, h := range wild {
			if h != k && hostCovers(h, k) {
				at = append(at, byHost[h]...)
			}
		}
		slices.Sort(at)
	}
	rs := make([]httpRule, len(at))
	for i, j := range at {
		rs[i] = rules[j]
	}
	return rs
}
