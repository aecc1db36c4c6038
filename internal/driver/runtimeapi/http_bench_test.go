package runtimeapi

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// One HTTPRoute changed among n on a real HAProxy: the driver's pass
// (every HTTP map rewritten and replaced through the Runtime API), no
// reload. go test ./internal/driver/runtimeapi -run '^$' -bench BenchmarkHTTPRouteChange
func BenchmarkHTTPRouteChange(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			d := startMapLab(b).d
			port := uint16(haproxytest.FreePort(b))
			// n routes, each a host with an Exact path, a prefix with a
			// header match, and a 90/10 split.
			table := func(gen int) *model.HTTP {
				h := &model.HTTP{Port: 80}
				for i := range n {
					host := fmt.Sprintf("r%d.example.com", i)
					path := "/app"
					if i == 0 {
						path = "/app" + strconv.Itoa(gen)
					}
					h.Hosts = append(h.Hosts, model.HTTPHost{Name: host, Rules: []model.HTTPRule{
						{PathType: model.PathExact, Path: path, Action: 2 * i},
						{PathType: model.PathPrefix, Path: "/", Headers: []model.HeaderMatch{{Name: "version", Value: "2"}}, Action: 2*i + 1},
						{PathType: model.PathPrefix, Path: "/", Action: 2 * i},
					}})
					h.Actions = append(h.Actions, model.HTTPAction{Backends: []model.WeightedBackend{{Name: "gwh_a", Weight: 90}, {Name: "gwh_b", Weight: 10}}},
						model.HTTPAction{Backends: []model.WeightedBackend{{Name: "gwh_b", Weight: 1}}})
				}
				return h
			}
			cfgOf := func(h *model.HTTP) model.Config {
				srv := []model.Server{{Addr: netip.MustParseAddr("127.0.0.1"), Port: 1}}
				return model.Config{
					Frontends: []model.Frontend{{Name: "gw_apps_gw_80", Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: port}}, HTTP: h}},
					Backends: []*model.Backend{{Name: "gwh_a", Balance: "roundrobin", HTTP: true, Servers: srv},
						{Name: "gwh_b", Balance: "roundrobin", HTTP: true, Servers: srv}},
				}
			}
			ctx := context.Background()
			if _, err := d.Apply(ctx, cfgOf(table(0))); err != nil {
				b.Fatal(err)
			}
			gen, ops := 0, 0
			for b.Loop() {
				gen++
				res, err := d.Apply(ctx, cfgOf(table(gen)))
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Reasons) > 0 {
					b.Fatalf("reloaded: %v", res.Reasons)
				}
				ops += res.Ops
			}
			b.ReportMetric(float64(ops)/float64(b.N), "commands/op")
		})
	}
}
