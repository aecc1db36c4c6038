package ingress

import (
	"cmp"
	"strconv"
	"strings"
	"time"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// unit is one Ingress, checked: its paths, default backend and TLS.
type unit struct {
	key      Key
	created  time.Time // with key, the Ingresses' order (olderFirst)
	set      parsed
	paths    []path
	fallback string // spec.defaultBackend's model backend; "" when none
	// fallbackSet and fallbackExt: the default backend's header changes
	// (the controller-wide ones); nil: none.
	fallbackSet []model.HeaderValue
	fallbackExt *model.HTTPActionExt
	tls         []netv1.IngressTLS
	client      *model.ClientAuth // its hosts' client verification (authtls.go); nil: none
	pass        []model.PassRoute // ssl-passthrough's names (passthrough.go); nil: none
}

// path is one path of one rule.
type path struct {
	host    string // exact, "*.suffix" or model.AnyHost
	typ     string // model.PathExact or model.PathPrefix
	value   string
	backend string              // model backend, or model.RejectBackend
	idx     int                 // its place in the Ingress
	headers []model.HeaderMatch // canary by header
	weights []model.WeightedBackend
	alias   bool // a server-alias's copy of a host's path
	// ext and redirect are what the path does beyond its backend
	// (routing.go); nil: nothing.
	ext      *model.HTTPActionExt
	redirect *model.Redirect // Scheme "": the request's
	// open: oauth's prefix path (oauth2-proxy's own), served without
	// the Ingress's external authentication (oauth.go)
	open bool
}

// compileOne checks an Ingress: refused is why it cannot be served at
// all ("" when it can). Unsupported annotations and backends that do not
// resolve are Events on res (nil: not reported, a last good version).
func compileOne(ing *netv1.Ingress, w *world, res *Result) (*unit, string) {
	k := Key{ing.Namespace, ing.Name}
	s, other, refused := parseAnnotations(ing.Annotations)
	if w.rec != nil {
		w.rec.other = other
		w.rec.cacheable = refused == "" && !s.auth.basic && !s.btls.on
	}
	if res != nil {
		countOthers(res, other) // unitmemo.go
		for _, o := range other {
			if o.verdict == Unsupported {
				msg := "annotation " + o.key + " is not supported: the Ingress is served without it"
				if why := unsupportedWhy[canonicalKey(o.key)]; why != "" { // authtls.go
					msg += " (" + why + ")"
				}
				res.Events = append(res.Events, Event{k, "UnsupportedAnnotation", msg})
			}
		}
	}
	if refused != "" {
		return nil, refused
	}
	u := &unit{key: k, created: ing.CreationTimestamp.Time, set: s}
	event := func(reason, msg string) {
		if res != nil {
			res.Events = append(res.Events, Event{k, reason, msg})
		}
	}
	if why := u.set.auth.resolve(ing.Namespace, w.in.Auth, event); why != "" { // auth.go
		return nil, why
	}
	u.set.access.auth = u.set.auth.auth
	u.set.access.ext = u.set.auth.ext.model(ing.Namespace) // extauth.go
	respHeaders, why := w.customHeaders(ing, event)        // customheaders.go
	if why != "" {
		return nil, why
	}
	respHeaders = withGlobal(w.globalResponse(), respHeaders) // globalheaders.go
	u.set.set = withGlobal(w.globalRequest(), u.set.set)
	btls, tag, why := u.set.btls.resolve(ing.Namespace, w.in, event) // backendtls.go
	if why != "" {
		return nil, why
	}
	u.client = u.set.authTLS.resolve(ing.Namespace, w.in, event) // authtls.go
	if u.set.authTLS.lax {
		event("UnsupportedAnnotation", "annotation "+HAProxyPrefix+"auth-tls-strict: false is not honoured: a host whose CA Secret does not resolve answers 403, never serves clients unverified")
	}
	if u.set.noBuffering {
		event("UnsupportedAnnotation", "annotation "+NginxPrefix+"proxy-request-buffering: off is not honoured: the HTTP frontends wait for a request's body (up to one buffer) before they pick a Pod")
	}
	u.set.access.clientCert = u.set.authTLS.clientCert(u.client)
	if why := u.set.authTLS.matchCNProblem(); why != "" { // authtls.go
		return nil, why
	}
	u.set.access.matchCN = u.set.authTLS.matchCN
	u.set.access.global.scope = ing.Namespace + "/" + ing.Name // globallimit.go
	v := variant{h2c: s.h2c, tls: btls, tlsTag: tag}
	v.cookie, v.cookieTag = s.cookie.affinity()                      // cookie.go
	v.retryOn, v.retries, v.retryIdem, v.retryTag = s.retry.policy() // retry.go
	v.balance = s.balance                                            // hashby.go
	v.connect = s.backendConnect()                                   // connect.go
	v.upstream = s.upstream                                          // upstream.go
	if w.connectReq {
		s.connectReq, v.connect = v.connect, 0 // the paths' map data (connect.go)
	}
	resolveIn := func(ns string, b *netv1.IngressBackend, at string, v variant) string {
		n, why := w.backend(ns, b, v)
		w.rec.call(w, ns, b, v, n, why) // unitmemo.go
		if why != "" {
			event("BackendNotFound", at+": "+why+"; its requests are answered 500")
			w.backends[model.RejectBackend] = &model.Backend{Name: model.RejectBackend, Balance: "roundrobin", Servers: []model.Server{}}
			return model.RejectBackend
		}
		return n
	}
	resolveAs := func(b *netv1.IngressBackend, at string, v variant) string { return resolveIn(ing.Namespace, b, at, v) }
	resolve := func(b *netv1.IngressBackend, at string) string { return resolveAs(b, at, v) }
	oauth := &u.set.auth.ext.oauth // oauth.go
	if _, ignored := oauth.finish(&u.set.auth.ext); ignored != "" {
		event("UnsupportedAnnotation", ignored)
	}
	oauthOn := oauth.on && u.set.auth.ext.url == ""
	if oauthOn {
		b, at, why := oauth.service(ing)
		if why != "" {
			return nil, why
		}
		u.set.access.ext = oauth.model(b, ing.Namespace, resolve(b, at))
	} else if ext := u.set.access.ext; ext != nil { // extauth.go
		if b, sns, t, why := authService(ext.URL, ing.Namespace); b != nil {
			av := variant{}
			if t != nil {
				av = variant{tls: t, tlsTag: tlsTag(t, "", "")} // backendtls.go
			}
			ext.Backend = resolveIn(sns, b, "annotation "+u.set.auth.ext.urlKey(), av)
		} else if why != "" {
			event("AuthURLClusterService", why)
		}
	}
	if s.passthrough { // passthrough.go
		var why string
		u.pass, why = passRoutes(ing, s, func(b *netv1.IngressBackend, at string) string { return resolveAs(b, at, variant{tcp: true}) })
		if why != "" {
			return nil, why
		}
	}
	for ri, r := range ing.Spec.Rules {
		at := "spec.rules[" + strconv.Itoa(ri) + "]"
		host := strings.ToLower(r.Host)
		if host == "" {
			host = model.AnyHost
		} else if !model.ValidSNI(host) {
			return nil, at + ".host " + settings.ShowValue(r.Host) + " is not a host name"
		}
		if r.HTTP == nil {
			continue
		}
		for pi, p := range r.HTTP.Paths {
			pat := at + ".http.paths[" + strconv.Itoa(pi) + "]"
			value := p.Path
			if value == "" {
				value = "/"
			}
			typ := model.PathPrefix
			if p.PathType != nil && *p.PathType == netv1.PathTypeExact {
				typ = model.PathExact
			}
			group := 0
			if typ == model.PathPrefix && (s.useRegex || (s.rewrite != "" && !s.rewritePfx)) {
				// ingress-nginx reads the path as a regular expression.
				v, g, ok := regexPath(value)
				if !ok {
					return nil, pat + ".path " + settings.ShowValue(p.Path) + " is a regular expression not served: only P(/|$)(.*), P/(.*) and P/.* (a prefix P of letters, digits, - _ ~ / and \\.) are"
				}
				value, group = v, g
			}
			if !model.ValidHTTPPath(value) {
				return nil, pat + ".path " + settings.ShowValue(p.Path) + " is not an absolute path of URL characters"
			}
			ext, rd, why := s.pathRoute(typ, value, group)
			if why != "" {
				return nil, pat + ": " + why
			}
			cors, _ := s.cors.policy() // cors.go: checked by parseAnnotations
			ext = withCORS(ext, rd, cors)
			ext = withHeaders(ext, respHeaders) // customheaders.go
			u.paths = append(u.paths, path{host: host, typ: typ, value: value, idx: len(u.paths), backend: resolve(&p.Backend, pat+".backend"), ext: ext, redirect: rd,
				open: oauthOn && oauth.isPrefix(value)})
		}
	}
	u.paths = append(u.paths, appRoots(u.paths, s.appRoot)...)
	for _, a := range s.aliases {
		for _, p := range u.paths {
			if p.host != model.AnyHost && !p.alias && p.host != a {
				p.host, p.alias = a, true
				u.paths = append(u.paths, p)
			}
		}
	}
	if b := ing.Spec.DefaultBackend; b != nil {
		u.fallback = resolve(b, "spec.defaultBackend")
		// The controller-wide headers (globalheaders.go) are every
		// request's: the default backend's too.
		u.fallbackSet, u.fallbackExt = w.globalRequest(), withHeaders(nil, w.globalResponse())
	}
	for ti, t := range ing.Spec.TLS {
		for _, h := range t.Hosts {
			if hl := strings.ToLower(h); !model.ValidSNI(hl) {
				return nil, "spec.tls[" + strconv.Itoa(ti) + "].hosts: " + settings.ShowValue(h) + " is not a host name"
			}
		}
	}
	u.tls = ing.Spec.TLS
	if why := authTLSHosts(u); why != "" { // authtls.go
		return nil, why
	}
	return u, ""
}

// byPrecedence orders the paths of one host: Exact first, then the
// longest path, then the most header matches, then the oldest Ingress
// and the path's place in it.
func byPrecedence(a, b rulePath) int {
	if ea, eb := a.typ == model.PathExact, b.typ == model.PathExact; ea != eb {
		if ea {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(len(strings.TrimRight(b.value, "/")), len(strings.TrimRight(a.value, "/"))); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(len(b.headers), len(a.headers)), olderFirst(a.u, b.u), cmp.Compare(a.idx, b.idx))
}

// olderFirst orders units as ourIngresses orders their Ingresses:
// oldest first, namespace/name on ties.
func olderFirst(a, b *unit) int {
	if c := a.created.Compare(b.created); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(a.key.Namespace, b.key.Namespace), cmp.Compare(a.key.Name, b.key.Name))
}

// rulePath is a path and the Ingress it comes from.
type rulePath struct {
	path
	u *unit
}
