package gatewayctl

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

// BackendTLSPolicies' status (gateway/backendtls.go): status.ancestors,
// one per Gateway of ours whose routes use a targeted Service; other
// controllers' ancestors are left alone, ours no longer used removed.

// policyAncestors is a policy's status.ancestors as the result says,
// merged with what they were.
func (p *Publisher) policyAncestors(ns, name string, have []gwv1.PolicyAncestorStatus, res *gateway.Result, now metav1.Time) []gwv1.PolicyAncestorStatus {
	want := res.Policies[gateway.Key{Namespace: ns, Name: name}].Ancestors
	return mergeEntries(p.opts.ControllerName, have, want, now, func(e *gwv1.PolicyAncestorStatus) entry {
		return entry{string(e.ControllerName), e.AncestorRef, &e.Conditions}
	})
}

// enqueuePolicies adds every policy whose ancestors differ.
func (p *Publisher) enqueuePolicies(add func(item), in gateway.Input, res *gateway.Result, now metav1.Time) {
	for _, b := range in.BackendTLSPolicies {
		if !equality.Semantic.DeepEqual(p.policyAncestors(b.Namespace, b.Name, b.Status.Ancestors, res, now), b.Status.Ancestors) {
			add(item{source.KindBackendTLSPolicy, b.Namespace, b.Name})
		}
	}
}

// writePolicy updates a policy's status when it differs.
func (p *Publisher) writePolicy(ctx context.Context, obj *gwv1.BackendTLSPolicy, res *gateway.Result, now metav1.Time, wait func() error) error {
	st := p.policyAncestors(obj.Namespace, obj.Name, obj.Status.Ancestors, res, now)
	if equality.Semantic.DeepEqual(st, obj.Status.Ancestors) {
		return nil
	}
	c := obj.DeepCopy()
	c.Status.Ancestors = st
	if err := wait(); err != nil {
		return err
	}
	_, err := p.client.GatewayV1().BackendTLSPolicies(obj.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
	return err
}
