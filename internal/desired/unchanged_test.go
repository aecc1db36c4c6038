package desired

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A pass whose world changed no server says so: Config.Changes set, with
// no backend listed and the last pass's Backends array as its Base, so
// that a driver applies it at no cost. A nil Changes is a whole pass to
// the driver, and with the pool the driver's whole pass at 10,000
// Services took ~30-50 ms, which the next write waited for (issue 29's
// churn: a Node is created not Ready, without an address, then its
// status is written).
func TestNothingChangedSaysSo(t *testing.T) {
	registered := func(name string) *corev1.Node { // what kubelet's registration writes first
		n := node(name, "", false, nil)
		n.Status.Addresses = nil
		return n
	}
	cases := []struct {
		name   string
		change func(in *Input)
		listed []string // the backends Changes lists
	}{
		{"a node registered, not ready, without an address", func(in *Input) { in.Nodes = append(in.Nodes, registered("n9")) }, nil},
		{"a node written again the same", func(in *Input) { in.Nodes[0] = node("n0", "10.0.2.1", true, nil) }, nil},
		{"an endpoint not ready", func(in *Input) {
			in.Slices[0] = slice("ns", "s0", 8080, ep{ip: "192.168.0.1", node: "n0", serving: true})
		}, []string{"be_ns_s0_80"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := defaults()
			opts.TrackNodes = true
			opts.NodeCheck = model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 2, Port: 10256}
			in := Input{Memo: &Memo{},
				Nodes:    []*corev1.Node{node("n0", "10.0.2.1", true, nil), node("n1", "10.0.2.2", true, nil)},
				Services: []*corev1.Service{svc("ns", "s0", 0, local), svc("ns", "s1", 1)},
				Slices: []*Slice{slice("ns", "s0", 8080, ep{ip: "192.168.0.1", node: "n0", ready: true, serving: true}),
					slice("ns", "s1", 8080, ep{ip: "192.168.1.1", node: "n9", ready: true, serving: true})}}
			in.Services[1].Spec.Ports[0].Port, in.Services[1].Spec.Ports[0].NodePort = 81, 30081
			Compute(in, opts)
			last := Compute(in, opts) // the memo's base
			c.change(&in)
			res := Compute(in, opts)
			ch := res.Config.Changes
			if !res.ServersOnly || ch == nil {
				t.Fatalf("servers only %v, Changes %v: want a pass derived from the last one", res.ServersOnly, ch)
			}
			if !model.SameSlice(ch.Base, last.Config.Backends) {
				t.Errorf("Changes.Base is not the last pass's Backends")
			}
			var listed []string
			for _, i := range ch.Backends {
				listed = append(listed, res.Config.Backends[i].Name)
			}
			if len(listed) != len(c.listed) || (len(listed) > 0 && listed[0] != c.listed[0]) {
				t.Errorf("Changes lists %v, want %v", listed, c.listed)
			}
			if len(c.listed) == 0 && !model.SameSlice(res.Config.Backends, last.Config.Backends) {
				t.Errorf("nothing changed, but the Backends array is a new one")
			}
		})
	}
}
