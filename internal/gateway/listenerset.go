package gateway

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// ListenerSets (gateway.networking.k8s.io/v1) add listener entries to the
// Gateway their parentRef names, when its spec.allowedListeners admits
// their namespace (None by default, Same, Selector, All). Each admitted
// entry is one more listener of that Gateway (the same validation, TLS
// termination, route attachment and serving as the Gateway's own), after
// the Gateway's own listeners and after the entries of older
// ListenerSets (creation time, then namespace/name): an entry that
// conflicts with a listener before it loses (Conflicted, Accepted=False
// with the conflict as reason) and the earlier one keeps serving. Routes
// attach to the entries through a parentRef of kind ListenerSet; a
// parentRef naming the Gateway reaches its own listeners only.

// listenerSetFeatures are claimed in the GatewayClass's supportedFeatures:
// the 13 upstream ListenerSet tests pass (docs/conformance/README.md).
var listenerSetFeatures = []gwv1.FeatureName{"ListenerSet"}

// KindListenerSet is the kind of a ListenerSet, as a route's parentRef
// names it.
const KindListenerSet = "ListenerSet"

// lset is a ListenerSet whose parentRef names a Gateway of ours.
type lset struct {
	obj       *gwv1.ListenerSet
	key       Key
	parent    *gw
	why, msg  string      // not admitted (NotAllowed); "" when admitted
	listeners []*listener // its entries, in its order (admitted only)
}

// owner is the kind and namespace a listener's references are made from:
// its ListenerSet's for an entry, else its Gateway's.
func (l *listener) owner(g *gwv1.Gateway) (string, string) {
	if l.set != nil {
		return KindListenerSet, l.set.key.Namespace
	}
	return "Gateway", g.Namespace
}

// home is the namespace allowedRoutes' Same means for l.
func (l *listener) home(g *gwv1.Gateway) string {
	_, ns := l.owner(g)
	return ns
}

// ListenerSetParent is the Gateway a ListenerSet's parentRef names, if
// it names one.
func ListenerSetParent(s *gwv1.ListenerSet) (Key, bool) {
	p := s.Spec.ParentRef
	if (p.Group != nil && *p.Group != gwv1.GroupName) || (p.Kind != nil && *p.Kind != "Gateway") {
		return Key{}, false
	}
	k := Key{s.Namespace, string(p.Name)}
	if p.Namespace != nil && *p.Namespace != "" {
		k.Namespace = string(*p.Namespace)
	}
	return k, true
}

// listenerSetsByParent groups ListenerSets by the Gateway they name, each
// group in precedence order (oldest first, then namespace/name).
func listenerSetsByParent(sets []*gwv1.ListenerSet) map[Key][]*gwv1.ListenerSet {
	out := map[Key][]*gwv1.ListenerSet{}
	for _, s := range sets {
		if k, ok := ListenerSetParent(s); ok {
			out[k] = append(out[k], s)
		}
	}
	for _, group := range out {
		slices.SortFunc(group, func(a, b *gwv1.ListenerSet) int {
			return older(&a.ObjectMeta, &b.ObjectMeta, a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
		})
	}
	return out
}

// admitsListeners reports whether g's allowedListeners admits
// ListenerSets of namespace ns.
func admitsListeners(g *gwv1.Gateway, ns string, nsLabels map[string]map[string]string) bool {
	al := g.Spec.AllowedListeners
	if al == nil || al.Namespaces == nil || al.Namespaces.From == nil {
		return false // None by default
	}
	switch *al.Namespaces.From {
	case gwv1.NamespacesFromAll:
		return true
	case gwv1.NamespacesFromSame:
		return ns == g.Namespace
	case gwv1.NamespacesFromSelector:
		if al.Namespaces.Selector == nil {
			return false
		}
		s, err := metav1.LabelSelectorAsSelector(al.Namespaces.Selector)
		return err == nil && s.Matches(labels.Set(nsLabels[ns]))
	}
	return false
}

// addListenerSets appends to x's listeners the entries of the
// ListenerSets naming it (sets, in precedence order) that it admits, and
// records every such ListenerSet in w. An entry conflicting with any
// accepted listener before it is rejected with the conflict.
func (w *world) addListenerSets(x *gw, sets []*gwv1.ListenerSet, udp bool) {
	for _, s := range sets {
		ls := &lset{obj: s, key: Key{s.Namespace, s.Name}, parent: x}
		x.sets = append(x.sets, ls)
		w.sets[ls.key] = ls
		if !admitsListeners(x.obj, s.Namespace, w.nsLabels) {
			ls.why, ls.msg = "NotAllowed", "Gateway "+x.key.String()+" does not allow ListenerSets from namespace "+s.Namespace+" (spec.allowedListeners)"
			continue
		}
		for _, e := range s.Spec.Listeners {
			l := newListener(gwv1.Listener{Name: e.Name, Hostname: e.Hostname, Port: e.Port, Protocol: e.Protocol, TLS: e.TLS, AllowedRoutes: e.AllowedRoutes}, udp)
			l.set = ls
			for _, o := range x.listeners {
				c, mixed := conflictOf(l, o)
				if c == "" {
					continue
				}
				if mixed {
					l.kinds = nil
				}
				by := "Gateway " + x.key.String()
				if o.set != nil {
					by = "ListenerSet " + o.set.key.String()
				}
				l.conflict = c
				l.reject(c, "conflicts with listener "+string(o.spec.Name)+" of "+by+" on port "+itoa(int(l.port))+" ("+c+"), which takes precedence")
				break
			}
			ls.listeners = append(ls.listeners, l)
			x.listeners = append(x.listeners, l)
		}
	}
}

// listenerSetPorts adds to ports those of the entries of the ListenerSets
// g admits (sets name g): an address shared with other Gateways or
// Services (pools.Allocate) must be free on every port g serves.
func listenerSetPorts(g *gwv1.Gateway, sets []*gwv1.ListenerSet, nsLabels map[string]map[string]string, ports []pools.Port) []pools.Port {
	for _, s := range sets {
		if !admitsListeners(g, s.Namespace, nsLabels) {
			continue
		}
		for _, e := range s.Spec.Listeners {
			p := pools.Port{Protocol: "TCP", Port: e.Port}
			if e.Protocol == gwv1.UDPProtocolType {
				p.Protocol = "UDP"
			}
			if !slices.Contains(ports, p) {
				ports = append(ports, p)
			}
		}
	}
	return ports
}

// ownListeners are x's own listeners, without the ListenerSets' entries.
func (x *gw) ownListeners() []*listener {
	out := make([]*listener, 0, len(x.listeners))
	for _, l := range x.listeners {
		if l.set == nil {
			out = append(out, l)
		}
	}
	return out
}

// parentListeners are the listeners a route's parentRef p can attach to:
// a Gateway of ours' own, or a ListenerSet's entries (none when its
// Gateway does not admit it). nil x: p names nothing of ours.
func (w *world) parentListeners(r *route, p gwv1.ParentReference, gws map[Key]*gw) (*gw, []*listener) {
	if p.Group != nil && *p.Group != gwv1.GroupName {
		return nil, nil
	}
	k := Key{r.key.Namespace, string(p.Name)}
	if p.Namespace != nil {
		k.Namespace = string(*p.Namespace)
	}
	switch {
	case p.Kind == nil || *p.Kind == "Gateway":
		if x, ok := gws[k]; ok {
			return x, x.ownListeners()
		}
	case *p.Kind == KindListenerSet:
		if ls, ok := w.sets[k]; ok {
			return ls.parent, ls.listeners
		}
	}
	return nil, nil
}

// valid reports whether an entry can serve: accepted, its certificates
// resolved.
func (l *listener) valid() bool { return l.accepted && l.certWhy == "" }

// listenerSetStatus is what a ListenerSet of ours should carry once the
// model is applied; gst is its Gateway's status.
func listenerSetStatus(ls *lset, gst gwv1.GatewayStatus) gwv1.ListenerSetStatus {
	gen := ls.obj.Generation
	var st gwv1.ListenerSetStatus
	both := func(ok bool, why, msg string) {
		st.Conditions = append(st.Conditions, cond("Accepted", ok, why, msg, gen))
		if ok {
			why = "Programmed"
		}
		st.Conditions = append(st.Conditions, cond("Programmed", ok, why, msg, gen))
	}
	if ls.why != "" {
		both(false, ls.why, ls.msg)
		return st
	}
	if i := slices.IndexFunc(gst.Conditions, func(c metav1.Condition) bool { return c.Type == "Accepted" }); i >= 0 && gst.Conditions[i].Status != metav1.ConditionTrue {
		both(false, "ParentNotAccepted", "Gateway "+ls.parent.key.String()+" is not accepted")
		return st
	}
	valid, served := 0, 0
	for _, l := range ls.listeners {
		es := listenerStatusOf(ls.parent, l, gen)
		st.Listeners = append(st.Listeners, gwv1.ListenerEntryStatus{Name: es.Name, SupportedKinds: es.SupportedKinds, AttachedRoutes: es.AttachedRoutes, Conditions: es.Conditions})
		if l.valid() {
			valid++
			if l.served && ls.parent.addrOK {
				served++
			}
		}
	}
	switch {
	case valid == 0:
		both(false, "ListenersNotValid", "no listener entry is valid")
	case served < valid:
		st.Conditions = append(st.Conditions, cond("Accepted", true, "Accepted", "accepted", gen),
			cond("Programmed", false, "Pending", "not every valid listener entry is served", gen))
	default:
		both(true, "Accepted", "accepted")
	}
	return st
}

// listenerSetStatuses fills the statuses of x's ListenerSets into res
// and the Gateway's attachedListenerSets into st.
func listenerSetStatuses(x *gw, st *gwv1.GatewayStatus, res *Result) {
	if len(x.sets) == 0 {
		return
	}
	attached := int32(0)
	for _, ls := range x.sets {
		s := listenerSetStatus(ls, *st)
		res.ListenerSets[ls.key] = s
		if i := slices.IndexFunc(s.Conditions, func(c metav1.Condition) bool { return c.Type == "Accepted" }); i >= 0 && s.Conditions[i].Status == metav1.ConditionTrue {
			attached++
		}
	}
	st.AttachedListenerSets = &attached
}
