package gatewayctl

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

// mergeConditions is have with each condition of want in place of the one
// of its type: a condition whose status, reason, message and generation
// did not change is kept as it is (its lastTransitionTime too); one whose
// status did not change keeps its lastTransitionTime; the others are
// stamped now. Conditions of other types (other controllers') stay.
func mergeConditions(have, want []metav1.Condition, now metav1.Time) []metav1.Condition {
	out := slices.Clone(have)
	for _, w := range want {
		i := slices.IndexFunc(out, func(c metav1.Condition) bool { return c.Type == w.Type })
		if i < 0 {
			w.LastTransitionTime = now
			out = append(out, w)
			continue
		}
		if out[i].Status == w.Status {
			w.LastTransitionTime = out[i].LastTransitionTime
		} else {
			w.LastTransitionTime = now
		}
		out[i] = w
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func classStatus(c *gwv1.GatewayClass, res *gateway.Result, now metav1.Time) gwv1.GatewayClassStatus {
	want := res.Classes[c.Name]
	st := *c.Status.DeepCopy()
	st.Conditions = mergeConditions(st.Conditions, want.Conditions, now)
	st.SupportedFeatures = want.SupportedFeatures
	return st
}

func gatewayStatus(g *gwv1.Gateway, res *gateway.Result, now metav1.Time) gwv1.GatewayStatus {
	want := res.Gateways[gateway.Key{Namespace: g.Namespace, Name: g.Name}]
	st := *g.Status.DeepCopy()
	st.Conditions = mergeConditions(st.Conditions, want.Conditions, now)
	st.Addresses = want.Addresses
	st.AttachedListenerSets = want.AttachedListenerSets // gateway/listenerset.go
	st.Listeners = mergeListeners(st.Listeners, want.Listeners, now)
	return st
}

// mergeListeners is want, each listener's conditions merged with those
// of the listener of its name in have (nil for none).
func mergeListeners(have, want []gwv1.ListenerStatus, now metav1.Time) []gwv1.ListenerStatus {
	if len(want) == 0 {
		return nil
	}
	ls := make([]gwv1.ListenerStatus, 0, len(want))
	for _, w := range want {
		var prev []metav1.Condition
		for _, h := range have {
			if h.Name == w.Name {
				prev = h.Conditions
			}
		}
		w.Conditions = mergeConditions(prev, w.Conditions, now)
		ls = append(ls, w)
	}
	return ls
}

// parents is a route's status.parents: other controllers' entries as
// they are, ours as the result says (merged with what they were).
func (p *Publisher) parents(kind, ns, name string, have []gwv1.RouteParentStatus, res *gateway.Result, now metav1.Time) []gwv1.RouteParentStatus {
	want := res.Routes.Get(gateway.RouteKey{Kind: kind, Key: gateway.Key{Namespace: ns, Name: name}})
	return mergeEntries(p.opts.ControllerName, have, want, now, func(e *gwv1.RouteParentStatus) entry {
		return entry{string(e.ControllerName), e.ParentRef, &e.Conditions}
	})
}

// entry is what mergeEntries reads of a route's parent or a policy's
// ancestor: whose it is, which object, and its conditions.
type entry struct {
	controller string
	ref        gwv1.ParentReference
	conds      *[]metav1.Condition
}

// mergeEntries is have with other controllers' entries as they are and
// ours as want says, each merged with what it was (mergeConditions).
func mergeEntries[T any](controller string, have, want []T, now metav1.Time, of func(*T) entry) []T {
	var out []T
	for i := range have {
		if of(&have[i]).controller != controller {
			out = append(out, have[i])
		}
	}
	for _, w := range want {
		we := of(&w)
		var prev []metav1.Condition
		for i := range have {
			if h := of(&have[i]); h.controller == controller && sameParent(h.ref, we.ref) {
				prev = *h.conds
			}
		}
		*we.conds = mergeConditions(prev, *we.conds, now)
		out = append(out, w)
	}
	if len(out) == 0 && have == nil {
		return nil
	}
	if out == nil {
		out = []T{}
	}
	return out
}

func sameParent(a, b gwv1.ParentReference) bool {
	eq := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	str := func(p any) *string {
		switch v := p.(type) {
		case *gwv1.Group:
			if v != nil {
				s := string(*v)
				return &s
			}
		case *gwv1.Kind:
			if v != nil {
				s := string(*v)
				return &s
			}
		case *gwv1.Namespace:
			if v != nil {
				s := string(*v)
				return &s
			}
		case *gwv1.SectionName:
			if v != nil {
				s := string(*v)
				return &s
			}
		}
		return nil
	}
	return a.Name == b.Name && eq(str(a.Group), str(b.Group)) && eq(str(a.Kind), str(b.Kind)) &&
		eq(str(a.Namespace), str(b.Namespace)) && eq(str(a.SectionName), str(b.SectionName)) &&
		(a.Port == nil) == (b.Port == nil) && (a.Port == nil || *a.Port == *b.Port)
}
