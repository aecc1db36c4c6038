package desired

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// BenchmarkComputeMemoNodes is a pass after one change, as the controller
// runs it at 10,000 Local Services with 5 endpoints each on 20 nodes, with
// the defaults (servers follow their node, nodes checked): an endpoint
// replaced, a node excluded and back, a node deleted and added again.
func BenchmarkComputeMemoNodes(b *testing.B) {
	const n = 10000
	opts := defaults()
	opts.TrackNodes = true
	opts.NodeCheck = model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 2, Port: 10256, HTTP: model.HTTPCheck{Path: "/healthz"}}
	eps := func(i, shift int) []ep {
		var out []ep
		for j := range 5 {
			out = append(out, ep{ip: fmt.Sprintf("192.168.%d.%d", i%250, j), node: fmt.Sprint("n", (i+j+shift)%20), ready: true, serving: true})
		}
		return out
	}
	for _, kind := range []string{"endpoint", "node-excluded", "node-deleted"} {
		b.Run(kind, func(b *testing.B) {
			in := bigInput(n, func(i int) []ep { return eps(i, 0) })
			in.Memo = &Memo{}
			Compute(in, opts)
			nodes := in.Nodes
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				switch kind {
				case "endpoint":
					k := i % n
					in.Slices[k] = slice("default", fmt.Sprint("svc", k), 8080, eps(k, i%2)...)
				case "node-excluded":
					var lbl map[string]string
					if i%2 == 0 {
						lbl = map[string]string{ExcludeLabel: ""}
					}
					nodes[3] = node("n3", "10.0.1.3", true, lbl)
				case "node-deleted":
					if i%2 == 0 {
						in.Nodes = append(append([]*corev1.Node{}, nodes[:3]...), nodes[4:]...)
					} else {
						in.Nodes = nodes
					}
				}
				if r := Compute(in, opts); len(r.Config.Backends) != n+1 {
					b.Fatal(len(r.Config.Backends))
				}
			}
		})
	}
}
