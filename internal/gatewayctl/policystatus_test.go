package gatewayctl

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

// A policy's ancestors: another controller's stay as they are, ours
// follow the result (one kept with its transition time, one no longer
// used dropped), and a policy no Gateway of ours uses keeps no entry of
// ours.
func TestPolicyAncestors(t *testing.T) {
	p := &Publisher{opts: PublisherOptions{ControllerName: gateway.ControllerName}}
	anc := func(ctrl, gw string, conds ...metav1.Condition) gwv1.PolicyAncestorStatus {
		g, k, ns := gwv1.Group(gwv1.GroupName), gwv1.Kind("Gateway"), gwv1.Namespace("apps")
		return gwv1.PolicyAncestorStatus{AncestorRef: gwv1.ParentReference{Group: &g, Kind: &k, Namespace: &ns, Name: gwv1.ObjectName(gw)},
			ControllerName: gwv1.GatewayController(ctrl), Conditions: conds}
	}
	theirs := anc("example.com/other", "gw", c("Accepted", "False", "Conflicted", 1, then))
	have := []gwv1.PolicyAncestorStatus{theirs,
		anc(gateway.ControllerName, "gw", c("Accepted", "True", "Accepted", 1, then)),
		anc(gateway.ControllerName, "gone", c("Accepted", "True", "Accepted", 1, then))}
	res := &gateway.Result{Policies: map[gateway.Key]gwv1.PolicyStatus{{Namespace: "apps", Name: "p"}: {Ancestors: []gwv1.PolicyAncestorStatus{
		anc(gateway.ControllerName, "gw", c("Accepted", "True", "Accepted", 2, metav1.Time{}), c("ResolvedRefs", "True", "ResolvedRefs", 2, metav1.Time{}))}}}}
	got := p.policyAncestors("apps", "p", have, res, now)
	want := []gwv1.PolicyAncestorStatus{theirs,
		anc(gateway.ControllerName, "gw", c("Accepted", "True", "Accepted", 2, then), c("ResolvedRefs", "True", "ResolvedRefs", 2, now))}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("ancestors\n got %+v\nwant %+v", got, want)
	}
	if got := p.policyAncestors("apps", "unused", []gwv1.PolicyAncestorStatus{have[1]}, res, now); len(got) != 0 || got == nil {
		t.Errorf("a policy no longer used: %+v, want an empty list", got)
	}
	if got := p.policyAncestors("apps", "unused", nil, res, now); got != nil {
		t.Errorf("a policy never ours: %+v, want nil", got)
	}
}
