package ingress

import (
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Merge adds the Ingresses' frontends and backends to cfg (the gateway
// mode's model). A Gateway's HTTP frontend with the very binds of an
// Ingress frontend (same addresses and port, both terminating TLS or
// neither) takes the Ingresses' table into its own: HTTPRoutes first,
// then Ingresses (MergeHTTP), and, for HTTPS, the Ingresses'
// certificates beside its own (its default stays). Otherwise the
// Ingress frontend is added as it is. A backend already in cfg (the
// reject backend) is not added twice.
//
// A frontend of cfg that cannot share (a TCP listener, or binds that
// overlap without being the same) on an Ingress frontend's port keeps
// it: the Ingress frontend is left out, and Merge returns why (the
// Gateways were there first; two binds of one port would fail the
// reload).
func Merge(cfg *model.Config, r Result) (conflicts []string) {
	for _, f := range r.Frontends {
		i := slices.IndexFunc(cfg.Frontends, func(g model.Frontend) bool {
			return g.HTTP != nil && (g.TLS == nil) == (f.TLS == nil) && sameBinds(g.Binds, f.Binds)
		})
		if i < 0 {
			if j := slices.IndexFunc(cfg.Frontends, func(g model.Frontend) bool { return overlap(g.Binds, f.Binds) }); j >= 0 {
				conflicts = append(conflicts, "frontend "+f.Name+" not served: frontend "+cfg.Frontends[j].Name+" binds its port")
				continue
			}
			cfg.Frontends = append(cfg.Frontends, f)
			continue
		}
		g := &cfg.Frontends[i]
		g.HTTP = MergeHTTP(g.HTTP, f.HTTP)
		if g.TLS != nil {
			t := *g.TLS
			t.Certificates = slices.Clone(t.Certificates)
			for _, c := range f.TLS.Certificates {
				if t.Cert(c.Name) == nil {
					t.Certificates = append(t.Certificates, c)
				}
			}
			slices.SortFunc(t.Certificates, func(a, b model.Certificate) int { return strings.Compare(a.Name, b.Name) })
			g.TLS = &t
		}
	}
	have := make(map[string]bool, len(cfg.Backends))
	for _, c := range cfg.Backends {
		have[c.Name] = true
	}
	for _, b := range r.Backends {
		if !have[b.Name] {
			cfg.Backends = append(cfg.Backends, b)
			have[b.Name] = true
		}
	}
	slices.SortFunc(cfg.Frontends, func(a, b model.Frontend) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(cfg.Backends, func(a, b *model.Backend) int { return strings.Compare(a.Name, b.Name) })
	cfg.Changes = nil // the backends array is no longer the one it was derived from
	return conflicts
}

// overlap reports whether a bind of a and one of b share a port and an
// address (an unspecified address is every address).
func overlap(a, b []model.Bind) bool {
	return slices.ContainsFunc(a, func(x model.Bind) bool {
		return slices.ContainsFunc(b, func(y model.Bind) bool {
			return x.Port == y.Port && (x.Addr == y.Addr || !x.Addr.IsValid() || !y.Addr.IsValid() || x.Addr.IsUnspecified() || y.Addr.IsUnspecified())
		})
	})
}

func sameBinds(a, b []model.Bind) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(x model.Bind) bool {
		return !slices.ContainsFunc(b, func(y model.Bind) bool { return x.Addr == y.Addr && x.Port == y.Port })
	})
}

// MergeHTTP is one table serving both: a request is matched against the
// most specific host of either (as in each), and there against the rules
// of both, the HTTPRoutes' first (gw's: those of its host and of the less
// specific hostnames that cover it, as the gateway compiler gave them),
// then the Ingresses' rules of that very host, or, for a host only gw
// has, of model.AnyHost (the Ingresses' catch-all: rules without a host
// and spec.defaultBackend). The table resolves the most specific path
// first (render/httpmaps.go), so an HTTPRoute wins the requests it
// matches on the same path; a more specific Ingress path wins its own.
// Both tables carry their kept shape (model.HTTP.KeptShape), and so does out.
func MergeHTTP(gw, ing *model.HTTP) *model.HTTP {
	out := &model.HTTP{Port: gw.Port, Actions: slices.Clone(gw.Actions), Passthrough: ing.Passthrough}
	off := len(out.Actions)
	out.Actions = append(out.Actions, ing.Actions...)
	shift := func(rs []model.HTTPRule) []model.HTTPRule {
		out := slices.Clone(rs)
		for i := range out {
			out[i].Action += off
		}
		return out
	}
	find := func(t *model.HTTP, name string) *model.HTTPHost {
		for i := range t.Hosts {
			if t.Hosts[i].Name == name {
				return &t.Hosts[i]
			}
		}
		return nil
	}
	// gwRules: gw's rules for a host it does not list: those of its most
	// specific host covering it.
	gwRules := func(name string) []model.HTTPRule {
		if h := find(gw, name); h != nil {
			return h.Rules
		}
		for _, h := range gw.Hosts { // most specific first
			if covers(h.Name, name) {
				return h.Rules
			}
		}
		return nil
	}
	ingRules := func(name string) []model.HTTPRule {
		if h := find(ing, name); h != nil {
			return shift(h.Rules)
		}
		if h := find(ing, model.AnyHost); h != nil {
			return shift(h.Rules)
		}
		return nil
	}
	var names []string
	for _, h := range slices.Concat(gw.Hosts, ing.Hosts) {
		if !slices.Contains(names, h.Name) {
			names = append(names, h.Name)
		}
	}
	slices.SortFunc(names, hostOrder)
	for _, n := range names {
		out.Hosts = append(out.Hosts, model.HTTPHost{Name: n, Rules: slices.Concat(gwRules(n), ingRules(n))})
	}
	// Every rule and action of both is in out, and no other: its shape
	// is the two shapes' union, not a walk of out.
	s := gw.KeptShape().Union(*ing.KeptShape())
	out.SetShape(&s)
	return out
}

// covers reports whether a table host h serves requests for name n when
// n is not a host of the table itself.
func covers(h, n string) bool {
	switch {
	case h == model.AnyHost:
		return true
	case n == model.AnyHost:
		return false
	case strings.HasPrefix(h, "*."):
		return strings.HasSuffix(n, h[1:])
	case strings.HasPrefix(h, model.OneLabelPrefix):
		label, ok := strings.CutSuffix(n, h[1:])
		return ok && label != "" && !strings.ContainsAny(label, ".*+")
	}
	return false
}
