package gatewayctl

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

// A ListenerSet's status: its conditions and each entry's merged with
// what it had (an unchanged status keeps its time), entries no longer
// listed dropped, and the result handed to the writer as the want says.
func TestListenerSetStatus(t *testing.T) {
	entry := func(name string, at metav1.Time, accepted string) gwv1.ListenerEntryStatus {
		return gwv1.ListenerEntryStatus{Name: gwv1.SectionName(name), AttachedRoutes: 1,
			Conditions: []metav1.Condition{c("Accepted", accepted, "Accepted", 1, at)}}
	}
	ls := &gwv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ls"}, Status: gwv1.ListenerSetStatus{
		Conditions: []metav1.Condition{c("Accepted", "True", "Accepted", 1, then)},
		Listeners:  []gwv1.ListenerEntryStatus{entry("kept", then, "True"), entry("flipped", then, "True"), entry("gone", then, "True")},
	}}
	for _, tc := range []struct {
		name string
		want gwv1.ListenerSetStatus
		out  string // each entry: name and the time of its Accepted
	}{
		{"entries merged by name", gwv1.ListenerSetStatus{
			Conditions: []metav1.Condition{c("Accepted", "True", "Accepted", 1, metav1.Time{})},
			Listeners:  []gwv1.ListenerEntryStatus{entry("kept", metav1.Time{}, "True"), entry("flipped", metav1.Time{}, "False"), entry("new", metav1.Time{}, "True")},
		}, "kept@then flipped@now new@now"},
		{"no entries: none listed", gwv1.ListenerSetStatus{
			Conditions: []metav1.Condition{c("Accepted", "False", "NotAllowed", 1, metav1.Time{})},
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &gateway.Result{ListenerSets: map[gateway.Key]gwv1.ListenerSetStatus{{Namespace: "ns", Name: "ls"}: tc.want}}
			st := listenerSetStatus(ls, res, now)
			got := ""
			for _, e := range st.Listeners {
				at := "then"
				if e.Conditions[0].LastTransitionTime == now {
					at = "now"
				}
				if got != "" {
					got += " "
				}
				got += string(e.Name) + "@" + at
			}
			if got != tc.out {
				t.Errorf("entries %q, want %q", got, tc.out)
			}
			if st.Conditions[0].Reason != tc.want.Conditions[0].Reason {
				t.Errorf("condition %+v, want %+v", st.Conditions[0], tc.want.Conditions[0])
			}
		})
	}
}
