package gatewayctl

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

var (
	then = metav1.NewTime(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	now  = metav1.NewTime(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
)

func c(typ, status, reason string, gen int64, at metav1.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, ObservedGeneration: gen, LastTransitionTime: at}
}

func TestMergeConditions(t *testing.T) {
	for _, tc := range []struct {
		name       string
		have, want []metav1.Condition
		out        []metav1.Condition
	}{
		{"new conditions are stamped now", nil,
			[]metav1.Condition{c("Accepted", "True", "Accepted", 1, metav1.Time{})},
			[]metav1.Condition{c("Accepted", "True", "Accepted", 1, now)}},
		{"an unchanged status keeps its time, even with a new generation or reason",
			[]metav1.Condition{c("Accepted", "True", "Accepted", 1, then)},
			[]metav1.Condition{c("Accepted", "True", "ListenersNotValid", 2, metav1.Time{})},
			[]metav1.Condition{c("Accepted", "True", "ListenersNotValid", 2, then)}},
		{"a changed status is stamped now",
			[]metav1.Condition{c("Programmed", "False", "Pending", 1, then)},
			[]metav1.Condition{c("Programmed", "True", "Programmed", 1, metav1.Time{})},
			[]metav1.Condition{c("Programmed", "True", "Programmed", 1, now)}},
		{"other types (another controller's) stay, in place",
			[]metav1.Condition{c("example.com/Audited", "True", "Audited", 1, then), c("Accepted", "False", "Pending", 1, then)},
			[]metav1.Condition{c("Accepted", "True", "Accepted", 1, metav1.Time{})},
			[]metav1.Condition{c("example.com/Audited", "True", "Audited", 1, then), c("Accepted", "True", "Accepted", 1, now)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mergeConditions(tc.have, tc.want, now)
			if len(got) != len(tc.out) {
				t.Fatalf("got %+v, want %+v", got, tc.out)
			}
			for i := range got {
				if got[i] != tc.out[i] {
					t.Errorf("condition %d: got %+v, want %+v", i, got[i], tc.out[i])
				}
			}
		})
	}
}

func parentStatus(controller, gw string, accepted string, at metav1.Time) gwv1.RouteParentStatus {
	return gwv1.RouteParentStatus{ParentRef: gwv1.ParentReference{Name: gwv1.ObjectName(gw)}, ControllerName: gwv1.GatewayController(controller),
		Conditions: []metav1.Condition{c("Accepted", accepted, "Accepted", 1, at)}}
}

// Route parents: other controllers' entries stay as they are; ours are
// replaced by what the result says, and dropped when it says nothing.
func TestParents(t *testing.T) {
	p := &Publisher{opts: PublisherOptions{ControllerName: gateway.ControllerName}}
	key := gateway.RouteKey{Kind: gateway.KindTCPRoute, Key: gateway.Key{Namespace: "ns", Name: "r"}}
	other := parentStatus("example.com/other", "theirs", "True", then)
	have := []gwv1.RouteParentStatus{other, parentStatus(gateway.ControllerName, "gw", "True", then), parentStatus(gateway.ControllerName, "gone", "True", then)}
	res := &gateway.Result{Routes: gateway.RouteStatuses{}.With(key, []gwv1.RouteParentStatus{parentStatus(gateway.ControllerName, "gw", "True", metav1.Time{})})}
	got := p.parents(key.Kind, "ns", "r", have, res, now)
	if len(got) != 2 || got[0].ControllerName != "example.com/other" || got[0].Conditions[0].LastTransitionTime != then {
		t.Fatalf("another controller's entry changed: %+v", got)
	}
	if got[1].ParentRef.Name != "gw" || got[1].Conditions[0].LastTransitionTime != then {
		t.Fatalf("our entry: %+v", got[1])
	}
	// Nothing of ours any more (the route left our Gateways): only theirs.
	got = p.parents(key.Kind, "ns", "r", have, &gateway.Result{}, now)
	if len(got) != 1 || got[0].ControllerName != "example.com/other" {
		t.Fatalf("got %+v", got)
	}
}
