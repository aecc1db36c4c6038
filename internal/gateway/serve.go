package gateway

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// serve adds a Gateway's accepted listeners to the model: TCP and TLS
// listeners of one port are one frontend, UDP listeners UDP ports.
func serve(cfg *model.Config, x *gw, w *world, backends map[string]*model.Backend) {
	w.serving, w.servingGW = x.key, x.obj // the ancestor of the BackendTLSPolicies its routes use
	binds := func(port uint16) []model.Bind {
		if len(x.addrs) == 0 {
			return []model.Bind{{Port: port}}
		}
		out := make([]model.Bind, len(x.addrs))
		for i, a := range x.addrs {
			out[i] = model.Bind{Addr: a, Port: port, Transparent: x.pooled}
		}
		return out
	}
	fronts := map[uint16]*model.Frontend{}
	var ports []uint16
	httpPorts := map[uint16][]*listener{}
	for _, l := range x.listeners {
		if !l.accepted || l.statusOnly() {
			continue
		}
		if l.servesHTTP() {
			if _, ok := httpPorts[l.port]; !ok {
				ports = append(ports, l.port)
			}
			httpPorts[l.port] = append(httpPorts[l.port], l)
			l.served = true
			continue
		}
		if l.udp() {
			ub := binds(l.port)
			for i := range ub {
				ub[i].Transparent = false // nothing binds: the kernel's rules name the address
			}
			cfg.UDP = append(cfg.UDP, udpService(x, l, ub, w))
			l.served = true
			continue
		}
		f, ok := fronts[l.port]
		if !ok {
			f = &model.Frontend{Name: name("gw", x.key.Namespace, x.key.Name, strconv.Itoa(int(l.port))), Service: x.key.String(), Binds: binds(l.port)}
			fronts[l.port] = f
			ports = append(ports, l.port)
		}
		f.TLS = withTLS(f.TLS, l.tls) // a TLS Terminate listener's certificates (tlsterminate.go)
		for _, a := range l.routes {
			if !a.served {
				continue
			}
			bes := weighted(a.refs, w, backends, false)
			if l.spec.Protocol != gwv1.TLSProtocolType {
				f.Routes = append(f.Routes, model.Route{Backends: bes})
				continue
			}
			for _, s := range a.snis {
				f.Routes = append(f.Routes, model.Route{SNI: s, Backends: bes})
			}
		}
		l.served = true
	}
	slices.Sort(ports)
	for _, p := range ports {
		if ls, ok := httpPorts[p]; ok {
			// Every HTTPS listener's certificates on the port (each
			// served for its names), the first listener's default.
			var tls *model.TLS
			for _, l := range ls {
				tls = withTLS(tls, l.tls)
			}
			cfg.Frontends = append(cfg.Frontends, model.Frontend{Name: name("gw", x.key.Namespace, x.key.Name, strconv.Itoa(int(p))),
				Service: x.key.String(), Binds: binds(p), TLS: tls, HTTP: w.tableOf(ls, p, backends)}) // tablememo.go
			continue
		}
		f := fronts[p]
		slices.SortStableFunc(f.Routes, func(a, b model.Route) int { return precedence(a.SNI, b.SNI) })
		if len(f.Routes) == 0 {
			// Bound, but nothing to serve yet: every connection is closed.
			f.Routes = []model.Route{{Backends: []model.WeightedBackend{{Name: model.RejectBackend, Weight: 1}}}}
			backends[model.RejectBackend] = rejectBackend()
		}
		cfg.Frontends = append(cfg.Frontends, *f)
	}
}

// precedence orders server names as HAProxy tries them: exact names
// first, then wildcards, longer suffixes first, then "" (any).
func precedence(a, b string) int {
	rank := func(s string) int {
		switch {
		case s == "":
			return 2
		case strings.HasPrefix(s, "*."):
			return 1
		}
		return 0
	}
	if c := cmp.Compare(rank(a), rank(b)); c != 0 {
		return c
	}
	if c := cmp.Compare(len(b), len(a)); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

// weighted turns a route's backendRefs into weighted backends (one per
// Service port, shared between routes; HTTP ones apart: mode http), the
// share of refs that do not resolve going to the reject backend.
func weighted(refs []resolvedRef, w *world, backends map[string]*model.Backend, http bool) []model.WeightedBackend {
	var out []model.WeightedBackend
	add := func(n string, weight int32) {
		for i := range out {
			if out[i].Name == n {
				out[i].Weight += weight
				return
			}
		}
		out = append(out, model.WeightedBackend{Name: n, Weight: weight})
	}
	for _, rr := range refs {
		if rr.weight <= 0 && rr.why != "" {
			continue
		}
		if rr.why != "" {
			add(model.RejectBackend, rr.weight)
			backends[model.RejectBackend] = rejectBackend()
			continue
		}
		// Never a listener's prefix ("gw"): HAProxy 3.3 and later refuse
		// a frontend and a backend of one name, which a Gateway and a
		// Service sharing a namespace, a name and a port would give.
		prefix := "gwt"
		if http {
			prefix = "gwh"
		}
		h2 := http && h2c(rr.port)
		if http && rr.grpc && !h2 {
			// gRPC is HTTP/2 whatever the port says (grpcroute.go):
			// a backend of its own beside an HTTPRoute's HTTP/1.1 one.
			prefix, h2 = "gwg", true
		}
		var btls *model.BackendTLS
		if http {
			var refuse bool
			if btls, refuse = w.backendTLS(rr.svc, rr.port); refuse { // backendtls.go
				add(model.RejectBackend, rr.weight)
				backends[model.RejectBackend] = rejectBackend()
				continue
			}
			btls = w.withClientCert(btls) // backendcert.go
			prefix += tlsSuffix(btls)
		}
		n := name(prefix, rr.svc.Namespace, rr.svc.Name, strconv.Itoa(int(rr.port.Port)))
		if btls != nil && btls.Cert != "" {
			n = name(prefix, rr.svc.Namespace, rr.svc.Name, strconv.Itoa(int(rr.port.Port)), btls.Cert)
		}
		if _, ok := backends[n]; !ok {
			// Also at weight 0: the backend stays, so a weight that
			// comes and goes changes a route map only (no reload).
			backends[n] = &model.Backend{Name: n, Service: rr.svc.String(), Balance: "roundrobin", HTTP: http, H2C: h2, TLS: btls,
				Servers: desired.PodServers(w.slices[rr.svc], rr.port)}
		}
		if rr.weight > 0 {
			add(n, rr.weight)
		}
	}
	if len(out) == 0 {
		// No backendRef with a weight: every connection is refused.
		backends[model.RejectBackend] = rejectBackend()
		out = []model.WeightedBackend{{Name: model.RejectBackend, Weight: 1}}
	}
	return out
}

func rejectBackend() *model.Backend {
	return &model.Backend{Name: model.RejectBackend, Balance: "roundrobin", Servers: []model.Server{}}
}

// udpService is a UDP listener's port: the servers of its route's
// backendRefs, each repeated in proportion to its backend's weight
// (UDPService.Weights).
func udpService(x *gw, l *listener, binds []model.Bind, w *world) model.UDPService {
	u := model.UDPService{Name: name("udp_gw", x.key.Namespace, x.key.Name, strconv.Itoa(int(l.port))), Service: x.key.String(),
		Binds: binds, Balance: model.BalanceRoundRobin, Servers: []model.Server{}}
	for _, a := range l.routes {
		if a.served { // the oldest
			u.Servers, u.Weights = udpServers(a.refs, w)
			break
		}
	}
	return u
}

// name is model.Name, the one rule for identifiers written into a
// configuration (Kubernetes names mapped to a safe alphabet, hashed when
// not clean), within the 100 bytes the gateway mode's names always had.
func name(prefix string, parts ...string) string { return model.NameWithin(100, prefix, parts...) }
