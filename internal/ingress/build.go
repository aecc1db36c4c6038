package ingress

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Declared are the request headers honoured annotations set
// (connection-proxy-header, upstream-vhost, x-forwarded-prefix), with a
// value no request sees.
var Declared = []model.HeaderValue{{Name: "connection", Value: "declared"}, {Name: "host", Value: "declared"}, {Name: "x-forwarded-prefix", Value: "/declared"}}

// ALPN is what the HTTPS frontend offers, in order.
var ALPN = []string{"h2", "http/1.1"}

// Frontend names.
var (
	HTTPFrontend  = model.Name("ing", "http")
	HTTPSFrontend = model.Name("ing", "https")
)

// build writes the served units into res: the HTTP frontend's table
// (redirects to HTTPS where ssl-redirect says so), the HTTPS frontend's
// table and certificates, and the backends. What the tables were made
// of is returned (passmemo.go keeps it).
func build(res *Result, units []*unit, w *world, opts Options) *tables {
	units = applyCanaries(units)
	tb := &tables{opts: opts, www: map[string]model.Redirect{}, hosts: map[string][]rulePath{}, shapes: map[bool]*model.ShapeCounter{}}
	tlsHosts, t := certificates(units, w, opts)
	tb.tlsHosts = tlsHosts
	// server-alias: ignored for a host an Ingress's rules name.
	named := map[string]bool{}
	for _, u := range units {
		for _, p := range u.paths {
			if !p.alias {
				named[p.host] = true
			}
		}
	}
	hosts := tb.hosts
	var oldest *unit // the oldest Ingress with a defaultBackend
	for _, u := range units {
		for _, p := range u.paths {
			if p.alias && named[p.host] {
				continue
			}
			hosts[p.host] = append(hosts[p.host], rulePath{p, u})
		}
		if u.fallback != "" && oldest == nil {
			oldest = u
		}
		if tb.fallback == "" && u.fallback != "" && w.serves(u.fallback) {
			tb.setFallback(u)
		}
	}
	if tb.fallback == "" && oldest != nil {
		tb.setFallback(oldest) // none has a server: the oldest's
	}
	// from-to-www-redirect: the other name of a host; HAProxy Ingress's
	// redirect-from: more names, to the Ingress's first host; unless an
	// Ingress serves them.
	www := tb.www
	redirectFrom := func(from, to string, code int) {
		if _, taken := hosts[from]; !taken && model.ValidSNI(from) {
			if _, ok := www[from]; !ok {
				www[from] = model.Redirect{Host: to, Code: code}
			}
		}
	}
	for _, u := range units {
		first := ""
		for _, p := range u.paths {
			if p.host == model.AnyHost || strings.HasPrefix(p.host, "*.") || p.alias {
				continue
			}
			if first == "" {
				first = p.host
			}
			if !u.set.wwwRedirect {
				continue
			}
			other := "www." + p.host
			if h, ok := strings.CutPrefix(p.host, "www."); ok {
				other = h
			}
			redirectFrom(other, p.host, 308)
		}
		for _, from := range u.set.redirectFrom {
			if first != "" {
				redirectFrom(from, first, 302)
			}
		}
	}
	if tb.fallback != "" {
		if _, ok := hosts[model.AnyHost]; !ok {
			hosts[model.AnyHost] = nil
		}
	}
	names := slices.Collect(maps.Keys(hosts))
	names = append(names, slices.Collect(maps.Keys(www))...)
	slices.SortFunc(names, hostOrder)

	table := func(port uint16, https bool) *model.HTTP {
		h := newTable(port)
		for _, name := range names {
			h.Hosts = append(h.Hosts, tb.host(h, name, https))
		}
		c := &model.ShapeCounter{} // the table's shape, counted once, kept by the pass memo (passmemo.go)
		c.Action(&h.Actions[0], 1)
		for i := range h.Hosts {
			c.Host(h, &h.Hosts[i], 1)
		}
		h.SetShape(c.Shape())
		tb.shapes[https] = c
		return h
	}
	if len(units) == 0 && !opts.Own {
		return tb
	}
	res.Frontends = append(res.Frontends, model.Frontend{Name: HTTPFrontend, Service: "ingress", Binds: binds(opts, opts.HTTPPort), HTTP: table(opts.HTTPPort, false)})
	if t != nil {
		h := table(opts.HTTPSPort, true)
		h.Passthrough = passthrough(units) // passthrough.go
		res.Frontends = append(res.Frontends, model.Frontend{Name: HTTPSFrontend, Service: "ingress", Binds: binds(opts, opts.HTTPSPort), TLS: t, HTTP: h})
	} else {
		for _, u := range units {
			if u.pass != nil {
				w.event(u.key, "PassthroughNotServed", "ssl-passthrough: no Ingress certificate resolves, so there is no HTTPS frontend to pass its hosts' connections on; give one (a spec.tls Secret or --ingress-default-certificate)")
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(w.backends)) {
		res.Backends = append(res.Backends, w.backends[n])
	}
	return tb
}

// tables is what build made the tables of: every host's paths, the
// redirected hosts, the default backend and the hosts with TLS.
type tables struct {
	opts           Options
	hosts          map[string][]rulePath
	www            map[string]model.Redirect
	fallback       string // "" when none
	fallbackAccess *model.HTTPAccess
	fallbackSet    []model.HeaderValue
	fallbackExt    *model.HTTPActionExt
	tlsHosts       map[string]bool
	shapes         map[bool]*model.ShapeCounter // by https: the HTTP and HTTPS tables' shapes (model.HTTP.SetShape)
}

// setFallback makes u's spec.defaultBackend the tables' default backend:
// that of the oldest Ingress whose default backend has a server in
// service (w.serves), else of the oldest (an Ingress whose Pods are gone,
// its namespace being deleted, does not keep every unmatched request
// answered 503 while a newer one could serve).
func (tb *tables) setFallback(u *unit) {
	tb.fallback, tb.fallbackAccess = u.fallback, u.set.access.model()
	tb.fallbackSet, tb.fallbackExt = u.fallbackSet, u.fallbackExt
}

// serves reports whether model backend name has a server in service
// (neither draining nor in maintenance).
func (w *world) serves(name string) bool {
	b := w.backends[name]
	return b != nil && slices.ContainsFunc(b.Servers, func(s model.Server) bool { return !s.Drain && !s.Maint })
}

// newTable is a table with no host yet. Action 0 declares the headers
// the honoured annotations may set: no rule uses it, but its names are
// the table's structure from the start, so an annotation that sets one
// changes map data only, never the configuration; its empty access
// control declares the access rules the same way (access.go).
func newTable(port uint16) *model.HTTP {
	return &model.HTTP{Port: port, Actions: []model.HTTPAction{{Set: Declared, Access: &model.HTTPAccess{}}}}
}

// host is the table's host name, its rules' actions appended to h's
// (one per rule, in order).
func (tb *tables) host(h *model.HTTP, name string, https bool) model.HTTPHost {
	port, opts := h.Port, tb.opts
	action := func(a model.HTTPAction) int {
		h.Actions = append(h.Actions, a)
		return len(h.Actions) - 1
	}
	host := model.HTTPHost{Name: model.OneLabel(name)} // "*." takes one label (the Ingress spec)
	if to, ok := tb.www[name]; ok {
		rd := ownRedirect(to, https, port)
		host.Rules = []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: action(model.HTTPAction{Redirect: rd})}}
		return host
	}
	rs := slices.Clone(tb.hosts[name])
	slices.SortStableFunc(rs, byPrecedence)
	for _, r := range rs {
		if https && r.u.pass != nil {
			continue // passthrough.go: its TLS never reaches this table
		}
		a := model.HTTPAction{Backends: r.weights, Set: r.u.set.set, Ext: r.ext}
		if a.Backends == nil {
			a.Backends = []model.WeightedBackend{{Name: r.backend, Weight: 1}}
		}
		if r.redirect != nil {
			a = model.HTTPAction{Redirect: ownRedirect(*r.redirect, https, port), Ext: r.ext}
		}
		if !https && redirects(r.u, r.host, tb.tlsHosts) {
			rd := &model.Redirect{Scheme: "https", Code: 308, StripSlash: stripsSlash(r.u)}
			if opts.HTTPSPort != 443 {
				rd.Port = opts.HTTPSPort
			}
			a = model.HTTPAction{Redirect: rd}
		}
		acc := r.u.set.access
		if r.open {
			acc.ext = nil // oauth.go: oauth2-proxy's own paths
		}
		a.Access = acc.model() // access.go: redirects too
		host.Rules = append(host.Rules, model.HTTPRule{PathType: r.typ, Path: r.value, Headers: r.headers, Action: action(a)})
	}
	if tb.fallback != "" {
		host.Rules = append(host.Rules, model.HTTPRule{PathType: model.PathPrefix, Path: "/",
			Action: action(model.HTTPAction{Backends: []model.WeightedBackend{{Name: tb.fallback, Weight: 1}}, Access: tb.fallbackAccess,
				Set: tb.fallbackSet, Ext: tb.fallbackExt})})
	}
	return host
}

// binds are the frontend's of port.
func binds(opts Options, port uint16) []model.Bind {
	if len(opts.Addresses) == 0 {
		return []model.Bind{{Port: port}}
	}
	out := make([]model.Bind, len(opts.Addresses))
	for i, a := range opts.Addresses {
		out[i] = model.Bind{Addr: a, Port: port, Transparent: opts.Own}
	}
	return out
}

// ownRedirect is rd on a frontend of port (HTTPS when https): a
// redirect without a scheme keeps the request's, and the port when it is
// not the scheme's own.
func ownRedirect(rd model.Redirect, https bool, port uint16) *model.Redirect {
	if rd.Scheme != "" {
		return &rd
	}
	rd.Scheme = "http"
	if https {
		rd.Scheme = "https"
	}
	if (https && port != 443) || (!https && port != 80) {
		rd.Port = port
	}
	return &rd
}

// redirects reports whether u's path on host h redirects HTTP to HTTPS:
// force-ssl-redirect, or a host with TLS unless ssl-redirect is false.
func redirects(u *unit, h string, tlsHosts map[string]bool) bool {
	if u.set.forceSSL {
		return true
	}
	return tlsHosts[h] && (u.set.sslRedirect == nil || *u.set.sslRedirect)
}

// stripsSlash reports whether u's HTTPS redirect drops a trailing '/'
// of the path and query, as ingress-nginx's does unless
// preserve-trailing-slash is true; HAProxy Ingress's ssl-redirect keeps
// the path as it is.
func stripsSlash(u *unit) bool {
	return !u.set.keepSlash && !u.set.haproxySSL
}

// hostOrder: exact names, then wildcards (longer suffixes first), then
// model.AnyHost; by name on ties.
func hostOrder(a, b string) int {
	rank := func(s string) int {
		switch {
		case s == model.AnyHost:
			return 2
		case strings.HasPrefix(s, "*."), strings.HasPrefix(s, model.OneLabelPrefix):
			return 1
		}
		return 0
	}
	return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(len(b), len(a)), cmp.Compare(a, b))
}

// certificates are the HTTPS frontend's TLS (nil when no certificate
// resolves) and the hosts TLS is configured for. A Secret that is
// missing or holds no valid certificate is an Event; its hosts are
// served with the default certificate.
func certificates(units []*unit, w *world, opts Options) (map[string]bool, *model.TLS) {
	hosts := map[string]bool{}
	sni := map[string][]string{}
	pem := map[string][]byte{}
	client := map[string]*model.ClientAuth{} // authtls.go
	var closed []string
	for _, u := range units {
		if u.pass != nil {
			continue // passthrough.go: HAProxy does not terminate its hosts
		}
		for _, t := range u.tls {
			for _, h := range t.Hosts {
				hosts[strings.ToLower(h)] = true
			}
			if t.SecretName == "" {
				if u.client != nil {
					closed = append(closed, lowered(t.Hosts)...)
				}
				continue
			}
			k := Key{u.key.Namespace, t.SecretName}
			b := w.in.Certs[k]
			if b == nil {
				why := w.in.Problems[k]
				if why == "" {
					why = "not found"
				}
				if u.client != nil {
					w.event(u.key, "InvalidCertificate", "Secret "+k.String()+": "+why+"; its hosts verify their clients, so they answer 403 until it holds a certificate")
					closed = append(closed, lowered(t.Hosts)...)
					continue
				}
				w.event(u.key, "InvalidCertificate", "Secret "+k.String()+": "+why+"; its hosts are served with the default certificate")
				continue
			}
			n := model.Name("cert", k.Namespace, k.Name)
			if u.client != nil {
				n = authCertName(k, u.client)
				client[n] = u.client
			}
			pem[n] = b.PEM
			for _, h := range t.Hosts {
				sni[n] = append(sni[n], strings.ToLower(h))
			}
			if len(t.Hosts) == 0 {
				sni[n] = append(sni[n], b.Names...)
			}
		}
	}
	t := &model.TLS{ALPN: slices.Clone(ALPN)}
	if d := opts.DefaultCert; d.Name != "" {
		if b := w.in.Certs[d]; b != nil {
			n := model.Name("cert", d.Namespace, d.Name)
			pem[n] = b.PEM
			sni[n] = append(sni[n], b.Names...)
			t.Default = n
		}
	}
	verified := verifiedHosts(sni, client, closed) // authtls.go
	for _, n := range slices.Sorted(maps.Keys(pem)) {
		s := slices.Compact(slices.Sorted(slices.Values(sni[n])))
		s = slices.DeleteFunc(s, func(h string) bool { return !model.ValidSNI(h) || (client[n] == nil && verified[h]) })
		if len(s) == 0 && len(sni[n]) > 0 && n != t.Default {
			continue // every name verified on another line
		}
		t.Certificates = append(t.Certificates, model.Certificate{Name: n, SNI: s, PEM: pem[n], Client: client[n]})
	}
	t.Closed = slices.Compact(slices.Sorted(slices.Values(closed)))
	if len(t.Certificates) == 0 {
		return hosts, nil
	}
	if t.Default == "" {
		t.Default = t.Certificates[0].Name
	}
	return hosts, t
}
