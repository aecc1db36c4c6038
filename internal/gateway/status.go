package gateway

import (
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

type metavCondition = metav1.Condition

// cond is a condition without lastTransitionTime: the writer keeps the
// time of a condition whose status did not change, and stamps the others.
func cond(typ string, ok bool, reason, msg string, gen int64) metav1.Condition {
	st := metav1.ConditionFalse
	if ok {
		st = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: gen}
}

// gatewayStatus is what a Gateway of ours should carry once the model
// Compute returned is applied (the writer publishes it only then).
func gatewayStatus(x *gw, lb []netip.Addr) gwv1.GatewayStatus {
	gen := x.obj.Generation
	var st gwv1.GatewayStatus
	if x.addrOK {
		ip := gwv1.IPAddressType
		for _, a := range x.addrs {
			st.Addresses = append(st.Addresses, gwv1.GatewayStatusAddress{Type: &ip, Value: a.String()})
		}
	}
	own := x.ownListeners() // not the ListenerSets' entries (listenerset.go)
	valid := 0
	for _, l := range own {
		if l.accepted {
			valid++
		}
	}
	switch {
	case x.addrWhy == "UnsupportedAddress":
		st.Conditions = append(st.Conditions, cond("Accepted", false, "UnsupportedAddress", "only addresses of type IPAddress are supported", gen))
	case valid == 0:
		// As the conformance suite wants: no valid listener, not accepted.
		st.Conditions = append(st.Conditions, cond("Accepted", false, "ListenersNotValid", "no listener is valid", gen))
	case valid < len(own):
		st.Conditions = append(st.Conditions, cond("Accepted", true, "ListenersNotValid", "some listeners are not valid", gen))
	default:
		st.Conditions = append(st.Conditions, cond("Accepted", true, "Accepted", "accepted", gen))
	}
	switch {
	case !x.addrOK && x.addrMsg != "":
		st.Conditions = append(st.Conditions, cond("Programmed", false, x.addrWhy, x.addrMsg, gen))
	case !x.addrOK:
		st.Conditions = append(st.Conditions, cond("Programmed", false, "AddressNotUsable", "spec.addresses must name addresses of this load balancer", gen))
	case valid == 0:
		st.Conditions = append(st.Conditions, cond("Programmed", false, "Invalid", "no listener is valid", gen))
	default:
		st.Conditions = append(st.Conditions, cond("Programmed", true, "Programmed", "programmed", gen))
	}
	for _, l := range own {
		st.Listeners = append(st.Listeners, listenerStatusOf(x, l, gen))
	}
	return st
}

// listenerStatusOf is one listener's status (a ListenerSet entry's has the
// same fields), at generation gen of its Gateway or ListenerSet.
func listenerStatusOf(x *gw, l *listener, gen int64) gwv1.ListenerStatus {
	ls := gwv1.ListenerStatus{Name: l.spec.Name, AttachedRoutes: l.attached, SupportedKinds: []gwv1.RouteGroupKind{}}
	for _, k := range l.kinds {
		g := gwv1.Group(gwv1.GroupName)
		ls.SupportedKinds = append(ls.SupportedKinds, gwv1.RouteGroupKind{Group: &g, Kind: gwv1.Kind(k)})
	}
	if l.accepted {
		ls.Conditions = append(ls.Conditions, cond("Accepted", true, "Accepted", "accepted", gen))
	} else {
		ls.Conditions = append(ls.Conditions, cond("Accepted", false, l.why, l.msg, gen))
	}
	switch {
	case l.set != nil && l.conflict != "":
		// A ListenerSet's entry that lost to a listener before it.
		ls.Conditions = append(ls.Conditions, cond("Programmed", false, l.conflict, l.msg, gen))
	case l.served && x.addrOK:
		ls.Conditions = append(ls.Conditions, cond("Programmed", true, "Programmed", "programmed", gen))
	case l.statusOnly() && l.accepted && l.certWhy == "":
		ls.Conditions = append(ls.Conditions, cond("Programmed", false, "Pending", "HTTPS listeners bind nothing yet: TLS termination is not served", gen))
	default:
		ls.Conditions = append(ls.Conditions, cond("Programmed", false, "Invalid", "not programmed", gen))
	}
	switch {
	case l.badKinds:
		ls.Conditions = append(ls.Conditions, cond("ResolvedRefs", false, "InvalidRouteKinds", "allowedRoutes.kinds names kinds this listener cannot take", gen))
	case l.certWhy != "":
		ls.Conditions = append(ls.Conditions, cond("ResolvedRefs", false, l.certWhy, l.certMsg, gen))
	default:
		ls.Conditions = append(ls.Conditions, cond("ResolvedRefs", true, "ResolvedRefs", "resolved", gen))
	}
	if l.conflict != "" {
		ls.Conditions = append(ls.Conditions, cond("Conflicted", true, l.conflict, l.msg, gen))
	} else {
		ls.Conditions = append(ls.Conditions, cond("Conflicted", false, "NoConflicts", "no conflicts", gen))
	}
	return ls
}
