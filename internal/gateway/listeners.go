package gateway

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// listener is one listener of a Gateway being computed.
type listener struct {
	spec     gwv1.Listener
	port     uint16
	hostname string   // "" for none; valid (model.ValidSNI) when set
	kinds    []string // route kinds it takes (supportedKinds)
	// accepted: valid and supported; why/msg say otherwise.
	accepted bool
	why, msg string
	badKinds bool   // allowedRoutes.kinds named a kind we do not take
	conflict string // "HostnameConflict" or "ProtocolConflict"; "" for none
	mixed    bool   // conflict: TLS listeners of one port in both modes
	attached int32
	// certWhy/certMsg: an HTTPS listener's certificateRefs do not resolve
	// (a ListenerConditionReason); "" when they do.
	certWhy, certMsg string
	tls              *model.TLS       // an HTTPS or TLS Terminate listener's termination (tls.go); nil: none to serve
	routes           []*attachedRoute // served, oldest first
	served           bool             // in the model
	set              *lset            // the ListenerSet of an entry (listenerset.go); nil: the Gateway's own
}

// attachedRoute is a route attached to a listener, with the server names
// it takes there (TLS) and its backends. Only served ones carry traffic
// (an older route may have the listener or the names).
type attachedRoute struct {
	r      *route
	snis   []string
	refs   []resolvedRef
	served bool
}

func (l *listener) udp() bool { return l.spec.Protocol == gwv1.UDPProtocolType }

func (l *listener) reject(why, msg string) { l.accepted, l.why, l.msg = false, why, msg }

// listenersOf validates a Gateway's listeners and finds their conflicts.
func listenersOf(g *gwv1.Gateway, udp bool) []*listener {
	var out []*listener
	for _, s := range g.Spec.Listeners {
		out = append(out, newListener(s, udp))
	}
	for i, a := range out {
		for j, b := range out {
			if i == j {
				continue
			}
			if c, mixed := conflictOf(a, b); c != "" && (a.conflict == "" || c == "ProtocolConflict") {
				a.conflict, a.mixed = c, a.mixed || mixed
			}
		}
	}
	for _, l := range out {
		if l.conflict != "" {
			why := "PortUnavailable"
			if l.mixed {
				// Accepted=False, ProtocolConflict, and no route kind
				// (TLSRouteListenerMixedTerminationNotSupported).
				why, l.kinds = l.conflict, nil
			}
			l.reject(why, "conflicts with another listener on port "+itoa(int(l.port))+" ("+l.conflict+")")
		}
	}
	return out
}

// newListener validates one listener (of a Gateway, or an entry of a
// ListenerSet: listenerset.go) alone.
func newListener(s gwv1.Listener, udp bool) *listener {
	l := &listener{spec: s, port: uint16(s.Port), accepted: true}
	if s.Hostname != nil {
		l.hostname = string(*s.Hostname)
	}
	var kind string
	var also []string // further route kinds (an HTTP listener's GRPCRoutes)
	switch s.Protocol {
	case gwv1.TCPProtocolType:
		kind = KindTCPRoute
	case gwv1.UDPProtocolType:
		kind = KindUDPRoute
		if !udp {
			l.reject("UnsupportedProtocol", "UDP listeners need the UDP data path (--udp)")
		}
	case gwv1.TLSProtocolType:
		kind = KindTLSRoute
		tlsListener(l) // tlsterminate.go
	case gwv1.HTTPProtocolType, gwv1.HTTPSProtocolType:
		kind = KindHTTPRoute // HTTPS: status only (http.go)
		also = []string{KindGRPCRoute}
		httpListener(l)
	default:
		l.reject("UnsupportedProtocol", "protocol "+strconv.Quote(string(s.Protocol))+" is not supported: TCP, TLS (passthrough), UDP and HTTP are (HTTPS: status only)")
	}
	if l.hostname != "" && !model.ValidSNI(l.hostname) {
		l.reject("UnsupportedValue", "hostname is not a valid DNS name")
	}
	if s.Port < 1 || s.Port > 65535 {
		l.reject("UnsupportedValue", "port out of range")
	}
	l.kinds = supportedKinds(s.AllowedRoutes, kind, also, &l.badKinds)
	return l
}

// conflictOf is how listener a conflicts with b, both accepted on their
// own: "ProtocolConflict" (mixed: TLS listeners of one port in both
// modes), "HostnameConflict", or "" for none.
func conflictOf(a, b *listener) (string, bool) {
	if a.port != b.port || a.udp() != b.udp() || !a.accepted || !b.accepted {
		return "", false
	}
	switch {
	case a.spec.Protocol != b.spec.Protocol:
		return "ProtocolConflict", false
	case a.terminates() != b.terminates():
		// TLS listeners of one port are all Passthrough or all
		// Terminate (no TLSRouteModeMixed: tlsterminate.go).
		return "ProtocolConflict", true
	case (a.spec.Protocol != gwv1.TLSProtocolType && a.spec.Protocol != gwv1.HTTPProtocolType && !a.statusOnly()) || a.hostname == b.hostname:
		return "HostnameConflict", false
	}
	return "", false
}

// supportedKinds are the route kinds a listener of this protocol takes,
// as allowedRoutes.kinds narrows them; bad reports kinds it names that
// we cannot take.
func supportedKinds(ar *gwv1.AllowedRoutes, kind string, also []string, bad *bool) []string {
	if kind == "" {
		return nil
	}
	all := append([]string{kind}, also...)
	if ar == nil || len(ar.Kinds) == 0 {
		return all
	}
	var out []string
	for _, k := range ar.Kinds {
		switch {
		case (k.Group != nil && *k.Group != gwv1.GroupName) || !contains(all, string(k.Kind)):
			*bad = true
		case !contains(out, string(k.Kind)):
			out = append(out, string(k.Kind))
		}
	}
	return out
}

// allows reports whether a listener of g takes routes from namespace ns.
func (l *listener) allows(g *gwv1.Gateway, ns string, nsLabels map[string]map[string]string) bool {
	from := gwv1.NamespacesFromSame
	var sel *metav1.LabelSelector
	if ar := l.spec.AllowedRoutes; ar != nil && ar.Namespaces != nil {
		if ar.Namespaces.From != nil {
			from = *ar.Namespaces.From
		}
		sel = ar.Namespaces.Selector
	}
	switch from {
	case gwv1.NamespacesFromAll:
		return true
	case gwv1.NamespacesFromSame:
		return ns == l.home(g)
	case gwv1.NamespacesFromSelector:
		if sel == nil {
			return false
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		return err == nil && s.Matches(labels.Set(nsLabels[ns]))
	}
	return false
}

// sniMatches reports whether server name pattern a and b overlap (each
// exact or "*.suffix"), and the narrower of the two.
func sniMatches(a, b string) (string, bool) {
	switch {
	case a == "":
		return b, true
	case b == "":
		return a, true
	case a == b:
		return a, true
	}
	wa, wb := strings.HasPrefix(a, "*."), strings.HasPrefix(b, "*.")
	switch {
	case wa && !wb && strings.HasSuffix(b, a[1:]):
		return b, true
	case wb && !wa && strings.HasSuffix(a, b[1:]):
		return a, true
	case wa && wb && strings.HasSuffix(a, b[1:]):
		return a, true
	case wa && wb && strings.HasSuffix(b, a[1:]):
		return b, true
	}
	return "", false
}

func namespaceLabels(nss []*corev1.Namespace) map[string]map[string]string {
	out := make(map[string]map[string]string, len(nss))
	for _, n := range nss {
		out[n.Name] = n.Labels
	}
	return out
}
