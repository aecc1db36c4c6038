package ingressctl

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/claims"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// An IngressClass of ours naming an AddressPool (the address-pool
// annotation, as on a Service or a Gateway) gets one address of it, with
// --address-pools: allocated in the gateway mode's pass among the
// Gateways and the LoadBalancer Services, claimed (internal/claims)
// before it is bound or published, bound transparent by the Ingresses'
// frontends (the HTTP one there from the start: the first Ingress is map
// data), listed in every served Ingress's status, and released when the
// class goes or stops naming the pool. Until it has one, the class's
// Ingresses are served nowhere: never on an address we do not own.

// Event reasons on the IngressClass.
const (
	ReasonAddressNotAssigned = "AddressNotAssigned"
	ReasonPoolsOff           = "AddressPoolsOff"
)

// poolState is the class's share of the pools (the worker's alone).
type poolState struct {
	class *netv1.IngressClass // asking this pass; nil: none asks
	key   string              // its request's key
	given gateway.Given
	// blocked: it asks but cannot be given an address (claims off, an
	// ip-families annotation it cannot read): the message.
	blocked string
	// reported: the last Event's message, by class UID (each once).
	reported map[types.UID]string
}

// ourClass is the IngressClass served (Options.Ingress.Class) when it
// names this controller; nil otherwise.
func (s *Server) ourClass() *netv1.IngressClass {
	classes, _ := s.src.Ingresses()
	for _, c := range classes {
		if c.Name == s.opts.Ingress.Class && c.Spec.Controller == ingress.ControllerName {
			return c
		}
	}
	return nil
}

// PoolRequests is what the class asks of the pools this pass
// (gatewayctl.PooledBeside); c: the pass's claims (nil: none are made,
// and then the class gets no address: the Services mode would not see
// it, as it sees a Gateway's status).
func (s *Server) PoolRequests(_ gateway.Input, c pools.Claims) []pools.Request {
	ic := s.ourClass()
	s.pool.class, s.pool.blocked = nil, ""
	if ic == nil {
		return nil
	}
	var cur []netip.Addr
	key := pools.IngressClassKey(ic.Name)
	for a, h := range c {
		if h.Key == key {
			cur = append(cur, a)
		}
	}
	cur = append(cur, s.pool.given.Addrs...)
	cur = append(cur, s.pool.given.Pending...)
	slices.SortFunc(cur, func(a, b netip.Addr) int { return a.Compare(b) })
	r, ok, err := pools.IngressClassRequest(ic, []uint16{s.httpPort(), s.httpsPort()}, slices.Compact(cur))
	if err != nil {
		s.pool.class, s.pool.key = ic, key
		s.pool.blocked = err.Error() + "; the class's Ingresses are not served"
		return nil
	}
	if !ok {
		s.pool.given = gateway.Given{}
		return nil
	}
	s.pool.class, s.pool.key = ic, r.Key
	if c == nil {
		s.pool.blocked = "an address of AddressPool " + r.Pool + " needs the address claims (networking.k8s.io/v1 IPAddress, Kubernetes 1.33 and later), which this apiserver does not serve; the class's Ingresses are not served"
		return nil
	}
	return []pools.Request{r}
}

// PoolGiven takes what the pass gave the class (before Add), and returns
// the claims to want for it and the classes whose claims this controller
// answers for (every IngressClass of ours: one that stopped naming a pool
// releases its address).
func (s *Server) PoolGiven(given map[string]gateway.Given) ([]claims.Want, map[types.UID]bool) {
	mine := map[types.UID]bool{}
	if ic := s.ourClass(); ic != nil {
		mine[ic.UID] = true
	}
	ic := s.pool.class
	if ic == nil || s.pool.blocked != "" {
		s.pool.given = gateway.Given{}
		return nil, mine
	}
	s.pool.given = given[s.pool.key]
	var out []claims.Want
	for _, a := range slices.Concat(s.pool.given.Addrs, s.pool.given.Pending) {
		out = append(out, claims.Want{Addr: a, ShareKey: ic.Annotations[pools.SharedIPAnnotation],
			Parent: claims.Parent{Kind: claims.IngressClass, Name: ic.Name, UID: ic.UID}})
	}
	return out, mine
}

// poolOptions are the pass's compile options with the class's address:
// serve false when the class asks for one and has none usable yet.
func (s *Server) poolOptions(opts ingress.Options) (_ ingress.Options, serve bool) {
	ic := s.pool.class
	if ic == nil {
		s.reportPool(s.poolsOffClass(), ReasonPoolsOff, "")
		return opts, true
	}
	g := s.pool.given
	var msg string
	switch {
	case s.pool.blocked != "":
		msg = s.pool.blocked
	case len(g.Problems) > 0:
		var ms []string
		for _, p := range g.Problems {
			ms = append(ms, strings.ReplaceAll(p.Message, "Service", "IngressClass"))
		}
		msg = strings.Join(ms, "; ") + "; the class's Ingresses are not served"
	case len(g.Addrs) == 0:
		s.reportPool(ic, "", "")
		return opts, false // being claimed: served once it is ours
	}
	s.reportPool(ic, ReasonAddressNotAssigned, msg)
	if msg != "" {
		return opts, false
	}
	s.mu.Lock()
	for _, a := range g.Addrs {
		if t := a.String(); !slices.Contains(s.poolAddrs, t) {
			s.poolAddrs = append(s.poolAddrs, t)
		}
	}
	s.mu.Unlock()
	opts.Addresses, opts.Own = g.Addrs, true
	return opts, true
}

// poolsOffClass is the class when it names a pool that this run does not
// serve (no --address-pools): told with an Event, served as before.
func (s *Server) poolsOffClass() *netv1.IngressClass {
	if s.opts.Pooled {
		return nil
	}
	if ic := s.ourClass(); ic != nil && ic.Annotations[pools.PoolAnnotation] != "" {
		return ic
	}
	return nil
}

// reportPool records a Warning on ic once per message ("" clears).
func (s *Server) reportPool(ic *netv1.IngressClass, reason, msg string) {
	if ic == nil {
		return
	}
	if reason == ReasonPoolsOff {
		msg = "the address-pool annotation needs run --address-pools; the class's Ingresses are served on --bind-address"
	}
	if s.pool.reported == nil {
		s.pool.reported = map[types.UID]string{}
	}
	if msg == "" || s.pool.reported[ic.UID] == msg {
		if msg == "" {
			delete(s.pool.reported, ic.UID)
		}
		return
	}
	s.pool.reported[ic.UID] = msg
	s.log.Warn("ingress: "+msg, "ingressclass", ic.Name, "reason", reason)
	if s.opts.Recorder != nil {
		s.opts.Recorder.Event(ic, corev1.EventTypeWarning, reason, msg)
	}
}

func (s *Server) httpPort() uint16  { return cmp.Or(s.opts.Ingress.HTTPPort, 80) }
func (s *Server) httpsPort() uint16 { return cmp.Or(s.opts.Ingress.HTTPSPort, 443) }
