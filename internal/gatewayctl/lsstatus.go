package gatewayctl

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

// ListenerSets' status (gateway/listenerset.go): their conditions and
// one entry per listener entry, written from what a pass applied, as a
// Gateway's are. A ListenerSet naming no Gateway of ours is left alone.

// listenerSetStatus is what ListenerSet s should carry, merged with what
// it has (conditions keep their lastTransitionTime while their status
// holds).
func listenerSetStatus(s *gwv1.ListenerSet, res *gateway.Result, now metav1.Time) gwv1.ListenerSetStatus {
	want := res.ListenerSets[gateway.Key{Namespace: s.Namespace, Name: s.Name}]
	st := *s.Status.DeepCopy()
	st.Conditions = mergeConditions(st.Conditions, want.Conditions, now)
	// An entry's status has a Gateway listener's fields: merged alike.
	conv := func(in []gwv1.ListenerEntryStatus) []gwv1.ListenerStatus {
		out := make([]gwv1.ListenerStatus, len(in))
		for i, e := range in {
			out[i] = gwv1.ListenerStatus(e)
		}
		return out
	}
	st.Listeners = nil
	for _, l := range mergeListeners(conv(s.Status.Listeners), conv(want.Listeners), now) {
		st.Listeners = append(st.Listeners, gwv1.ListenerEntryStatus(l))
	}
	return st
}

// enqueueListenerSets adds every ListenerSet of ours whose status differs.
func enqueueListenerSets(add func(item), in gateway.Input, res *gateway.Result, now metav1.Time) {
	for _, s := range in.ListenerSets {
		if _, ok := res.ListenerSets[gateway.Key{Namespace: s.Namespace, Name: s.Name}]; ok &&
			!equality.Semantic.DeepEqual(listenerSetStatus(s, res, now), s.Status) {
			add(item{gateway.KindListenerSet, s.Namespace, s.Name})
		}
	}
}

// writeListenerSet updates a ListenerSet's status when it differs.
func (p *Publisher) writeListenerSet(ctx context.Context, obj *gwv1.ListenerSet, res *gateway.Result, now metav1.Time, wait func() error) error {
	if _, ok := res.ListenerSets[gateway.Key{Namespace: obj.Namespace, Name: obj.Name}]; !ok {
		return nil
	}
	st := listenerSetStatus(obj, res, now)
	if equality.Semantic.DeepEqual(st, obj.Status) {
		return nil
	}
	c := obj.DeepCopy()
	c.Status = st
	if err := wait(); err != nil {
		return err
	}
	_, err := p.client.GatewayV1().ListenerSets(obj.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
	return err
}
