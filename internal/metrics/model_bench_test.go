package metrics

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// BenchmarkCount is what a scrape costs to size the model at 10,000
// Services with 4 servers each on 100 nodes (10 out of service),
// following their nodes. A pass only keeps the model (Instance.Model).
func BenchmarkCount(b *testing.B) {
	nodes := model.Backend{Name: model.NodesBackend}
	for n := range 100 {
		nodes.Servers = append(nodes.Servers, model.Server{Addr: netip.AddrFrom4([4]byte{10, 0, byte(n / 250), byte(n%250 + 1)}), Maint: n%10 == 0})
	}
	cfg := model.Config{Backends: []*model.Backend{&nodes}}
	for i := range 10000 {
		be := model.Backend{Name: fmt.Sprintf("be_ns_svc%d_80", i), Service: fmt.Sprintf("ns/svc%d", i), TrackNodes: true}
		for s := range 4 {
			be.Servers = append(be.Servers, model.Server{Addr: nodes.Servers[(i+s*7)%100].Addr, Port: 30000})
		}
		cfg.Backends = append(cfg.Backends, &be)
	}
	b.ResetTimer()
	for range b.N {
		if c := count(cfg, false); c.backends != 10000 {
			b.Fatal(c.backends)
		}
	}
}
