package gateway

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// world indexes what routes refer to.
type world struct {
	services    map[Key]*corev1.Service
	secrets     map[Key]*Secret
	slices      map[Key][]*desired.Slice
	grants      map[string][]*gwv1beta1.ReferenceGrant // by namespace
	nsLabels    map[string]map[string]string
	btls        map[btlsTarget]*btlsPolicy // BackendTLSPolicies by target (backendtls.go)
	btlsAll     []*btlsPolicy
	btlsLost    map[btlsTarget][]*btlsPolicy // the younger policies of a target
	serving     Key                          // the Gateway serve is compiling
	servingGW   *gwv1.Gateway
	clientCerts map[Key]*clientCert // Gateways' backend client certificates (backendcert.go)
	certMemo    *CertMemo
	configMaps  map[Key]*corev1.ConfigMap // CA bundles (backendtls.go, clientauth.go)
	memo        *Memo                     // Compute's per-route memo (memo.go); nil: none
	sets        map[Key]*lset             // the ListenerSets naming a Gateway of ours (listenerset.go)
	// The pass's listeners numbered, and the claims of the route being
	// attached, with the memo (attachmemo.go).
	lindex map[*listener]int
	lall   []*listener
	rec    []claimRec
	recOK  bool
	// recent: the backends last put into the pass's backends map by a
	// kept fragment (backendsrecent.go).
	recent recentBackends
	// nonReplay counts the routes whose attachment was not recorded;
	// edits, in a spliced pass, the listeners' lists changed, by
	// place in lall (splice.go).
	nonReplay int
	edits     map[int]*listEdit
}

func newWorld(in Input) *world {
	w := &world{services: make(map[Key]*corev1.Service, len(in.Services)), secrets: make(map[Key]*Secret, len(in.Secrets)),
		slices: make(map[Key][]*desired.Slice, len(in.Services)), grants: map[string][]*gwv1beta1.ReferenceGrant{},
		nsLabels: namespaceLabels(in.Namespaces), sets: map[Key]*lset{}}
	for _, s := range in.Services {
		w.services[Key{s.Namespace, s.Name}] = s
	}
	for _, s := range in.Slices {
		if s.Service != "" {
			k := Key{s.Namespace, s.Service}
			w.slices[k] = append(w.slices[k], s)
		}
	}
	for _, s := range in.Secrets {
		w.secrets[Key{s.Namespace, s.Name}] = s
	}
	for _, g := range in.Grants {
		w.grants[g.Namespace] = append(w.grants[g.Namespace], g)
	}
	w.configMaps = make(map[Key]*corev1.ConfigMap, len(in.ConfigMaps))
	for _, c := range in.ConfigMaps {
		w.configMaps[Key{c.Namespace, c.Name}] = c
	}
	return w
}

// resolvedRef is one backendRef: a Service port whose servers serve it,
// or why it does not resolve (its share of connections is then refused).
type resolvedRef struct {
	svc    Key
	port   corev1.ServicePort
	weight int32
	grpc   bool   // a GRPCRoute's: its servers speak h2c (serve.go)
	why    string // "" when it resolves; else a RouteConditionReason
	msg    string
}

// resolve reads a route's backendRefs.
func (w *world) resolve(r *route) []resolvedRef {
	out := make([]resolvedRef, 0, len(r.refs))
	for _, ref := range r.refs {
		rr := resolvedRef{weight: 1, svc: Key{r.key.Namespace, string(ref.Name)}, grpc: r.key.Kind == KindGRPCRoute}
		if ref.Weight != nil {
			rr.weight = *ref.Weight
		}
		if ref.Namespace != nil {
			rr.svc.Namespace = string(*ref.Namespace)
		}
		switch {
		case ref.Group != nil && *ref.Group != "" && *ref.Group != "core", ref.Kind != nil && *ref.Kind != "Service":
			rr.why, rr.msg = "InvalidKind", "backendRefs may only name Services"
		case rr.svc.Namespace != r.key.Namespace && !w.granted(r, rr.svc):
			rr.why, rr.msg = "RefNotPermitted", "no ReferenceGrant in "+rr.svc.Namespace+" allows "+r.key.Kind+"s from "+r.key.Namespace+" to Service "+rr.svc.Name
		case ref.Port == nil:
			rr.why, rr.msg = "BackendNotFound", "backendRef to Service "+rr.svc.String()+" has no port"
		default:
			rr.why, rr.msg = w.servicePort(&rr, r.key.Kind == KindUDPRoute, int32(*ref.Port))
		}
		out = append(out, rr)
	}
	return out
}

func (w *world) servicePort(rr *resolvedRef, udp bool, port int32) (string, string) {
	s, ok := w.services[rr.svc]
	if !ok {
		return "BackendNotFound", "Service " + rr.svc.String() + " not found"
	}
	want := corev1.ProtocolTCP
	if udp {
		want = corev1.ProtocolUDP
	}
	found := false
	for _, p := range s.Spec.Ports {
		if p.Port != port {
			continue
		}
		found = true
		if p.Protocol == want || (p.Protocol == "" && want == corev1.ProtocolTCP) {
			rr.port = p
			return "", ""
		}
	}
	if found {
		return "UnsupportedProtocol", "Service " + rr.svc.String() + " port " + strconv.Itoa(int(port)) + " is not " + string(want)
	}
	return "BackendNotFound", "Service " + rr.svc.String() + " has no port " + strconv.Itoa(int(port))
}

// granted reports whether a ReferenceGrant in the Service's namespace
// lets route r refer to it.
func (w *world) granted(r *route, svc Key) bool {
	return w.grantedTo(r.key.Kind, r.key.Namespace, "Service", svc)
}

// attach attaches route r to the listeners of our Gateways its
// parentRefs name, and returns the status of each such parent.
func attach(r *route, gws map[Key]*gw, w *world, controller string) []gwv1.RouteParentStatus {
	var out []gwv1.RouteParentStatus
	var refs []resolvedRef
	for _, p := range r.parents {
		x, lis := w.parentListeners(r, p, gws) // a Gateway's own listeners, or a ListenerSet's (listenerset.go)
		if x == nil {
			continue // not a Gateway of ours, nor a ListenerSet naming one
		}
		if refs == nil {
			refs = w.resolved(r) // memo.go
		}
		st := gwv1.RouteParentStatus{ParentRef: p, ControllerName: gwv1.GatewayController(controller)}
		accepted, why, msg := false, "UnsupportedValue", r.invalid
		switch {
		case r.invalid == "":
			accepted, why, msg = attachTo(r, x, lis, p, refs, w)
		case r.kept: // its last valid rules are served; the change is refused
			attachTo(r, x, lis, p, refs, w)
			msg += "; its last valid version is served"
		}
		st.Conditions = append(st.Conditions, cond("Accepted", accepted, why, msg, r.meta.Generation))
		resolved, why, msg := true, "ResolvedRefs", "all backendRefs resolve"
		for _, rr := range refs {
			if rr.why != "" {
				resolved, why, msg = false, rr.why, rr.msg
				break
			}
		}
		st.Conditions = append(st.Conditions, cond("ResolvedRefs", resolved, why, msg, r.meta.Generation))
		out = append(out, st)
	}
	return out
}

// attachTo attaches r to the listeners of x that parentRef p selects
// and that take it. Routes are attached oldest first, and every route a
// listener takes is attached (Accepted, counted in attachedRoutes, as the
// conformance suite wants), but an older route keeps what it has: a TCP
// or UDP listener serves its oldest route only, a TLS server name goes
// to the oldest route that asks for it.
func attachTo(r *route, x *gw, lis []*listener, p gwv1.ParentReference, refs []resolvedRef, w *world) (bool, string, string) {
	section, kindOK, nsOK, hostOK := false, false, false, false
	for _, l := range lis {
		if (p.SectionName != nil && *p.SectionName != l.spec.Name) || (p.Port != nil && uint16(*p.Port) != l.port) {
			continue
		}
		section = true
		if !l.accepted || !contains(l.kinds, r.key.Kind) {
			continue
		}
		kindOK = true
		if !l.allows(x.obj, r.key.Namespace, w.nsLabels) {
			continue
		}
		nsOK = true
		var snis []string
		if r.key.Kind == KindTLSRoute || r.key.Kind == KindHTTPRoute || r.key.Kind == KindGRPCRoute {
			if snis = w.snisOf(r, l.hostname); len(snis) == 0 {
				continue
			}
		}
		hostOK = true
		l.claim(r, snis, refs)
		w.recordClaim(l, l.routes[len(l.routes)-1]) // attachmemo.go
	}
	switch {
	case !section:
		return false, "NoMatchingParent", "no listener matches the parentRef's sectionName and port"
	case !kindOK || !nsOK:
		return false, "NotAllowedByListeners", "no matching listener takes " + r.key.Kind + "s from namespace " + r.key.Namespace
	case !hostOK:
		return false, "NoMatchingListenerHostname", "no hostname of the route matches a listener's"
	case !x.addrOK:
		return false, "Pending", "the Gateway's addresses cannot be served"
	}
	return true, "Accepted", "attached"
}

// claim attaches r to l. It is served unless older routes took l (TCP,
// UDP) or all of the server names r wants there (TLS).
func (l *listener) claim(r *route, snis []string, refs []resolvedRef) {
	a := &attachedRoute{r: r, refs: refs}
	switch {
	case l.statusOnly():
		// Counted, never served (http.go).
	case l.servesHTTP():
		// Every route is served: precedence orders their rules
		// (httproute.go).
		a.snis, a.served = snis, true
	case l.spec.Protocol != gwv1.TLSProtocolType:
		a.served = !slices.ContainsFunc(l.routes, func(o *attachedRoute) bool { return o.served })
	default:
		for _, s := range snis {
			if !l.taken(s) {
				a.snis = append(a.snis, s)
			}
		}
		a.served = len(a.snis) > 0
	}
	l.routes = append(l.routes, a)
	l.attached++
}

func (l *listener) taken(sni string) bool {
	for _, a := range l.routes {
		if contains(a.snis, sni) {
			return true
		}
	}
	return false
}

// routeSNIs are the server names a TLSRoute takes on a listener: each of
// its hostnames that overlaps the listener's, narrowed to the overlap;
// the listener's own (or any, "") when the route names none.
func routeSNIs(hostnames []gwv1.Hostname, listener string) []string {
	if len(hostnames) == 0 {
		return []string{listener}
	}
	var out []string
	for _, h := range hostnames {
		if !model.ValidSNI(string(h)) {
			continue
		}
		if s, ok := sniMatches(string(h), listener); ok && !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func itoa(i int) string { return strconv.Itoa(i) }
