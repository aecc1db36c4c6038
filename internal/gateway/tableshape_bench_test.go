package gateway

import (
	"net/netip"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/cputime"
)

// BenchmarkTableShape: what the driver asks of a table when a route is
// added among 5,000 (BenchmarkHTTPRoutePropagation's new route): the
// structure hash (render.HashMemo, the table differing from the last
// one) and the header sets the maps' memo names (HTTPMaps), with the
// shape the table memo keeps (kept) and with the table walked for it
// each time (walked: model.Shaped, what a whole build pays; every table
// carries a Shape, so the walk before tableshape.go is gone).
//
//	go test ./internal/gateway -run '^$' -bench BenchmarkTableShape -count 8
func BenchmarkTableShape(b *testing.B) {
	in := manyRoutes(5000, 2)
	opts := Options{Addresses: []netip.Addr{lbAddr}, Routes: &RouteMemo{}, Memo: &Memo{}}
	var kept [2]model.Config
	kept[0] = Compute(in, opts).Config
	in.HTTPRoutes = append(in.HTTPRoutes, benchRoute(2500, 2, "/n")) // its host among the others'
	kept[1] = Compute(in, opts).Config
	ro := render.Options{ACLDir: b.TempDir()}
	for _, way := range []string{"kept", "walked"} {
		cfgs := kept
		if way == "walked" {
			for i := range cfgs {
				h := *cfgs[i].Frontends[0].HTTP
				cfgs[i].Frontends = []model.Frontend{cfgs[i].Frontends[0]}
				cfgs[i].Frontends[0].HTTP = &h
			}
		}
		b.Run("5000/"+way, func(b *testing.B) {
			var m render.HashMemo
			var cpu time.Duration
			i := 0
			for b.Loop() {
				i++
				h := cfgs[i%2].Frontends[0].HTTP
				c := cputime.Used()
				if way == "walked" {
					model.Shaped(h)
				}
				m.StructureHash(cfgs[i%2], nil, ro)
				_ = h.HeaderSets()
				cpu += cputime.Used() - c
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(i), "cpu-ms/op")
		})
	}
}
