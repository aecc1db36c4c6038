package ingress

import (
	"fmt"
	"testing"

	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// BenchmarkIngressPass: a pass after one Ingress's path changed at 5,000
// Ingresses (a patched pass), as far as the driver's first steps on its
// tables: stage=compile is ingress.Compile alone; stage=hash adds the
// structure hash (render.HashMemo: is the change structure?) and each
// HTTP table's maps edit (render.HTTPMapsMemo.Update), which read the
// tables' shapes (header sets, header names, access). The layout is
// assigned once: the change names no new backend.
// go test ./internal/ingress -run '^$' -bench BenchmarkIngressPass -benchmem -count 8
func BenchmarkIngressPass(b *testing.B) {
	for _, stage := range []string{"compile", "hash"} {
		b.Run("ingresses=5000/stage="+stage, func(b *testing.B) {
			in, opts := versionedWorld(5000) // compile_bench_test.go
			last := opts.Last
			o := render.Options{StatsSocket: "/run/hks/admin.sock", ACLDir: "/var/lib/hks/acl", CertDir: "/var/lib/hks/certs"}
			res := Compile(in, opts)
			cfg := model.Config{Frontends: res.Frontends, Backends: res.Backends}
			layout, _ := plan.Assign(cfg, nil, true)
			var hm render.HashMemo
			maps := map[string]*render.HTTPMapsMemo{}
			driver := func(res Result) {
				hm.StructureHash(model.Config{Frontends: res.Frontends, Backends: res.Backends}, layout, o)
				for _, f := range res.Frontends {
					if maps[f.Name] == nil {
						maps[f.Name] = &render.HTTPMapsMemo{}
					}
					maps[f.Name].Update(f.HTTP)
				}
			}
			driver(res)
			b.ReportAllocs()
			start := cpuTime()
			i := 0
			for b.Loop() {
				j := i % len(in.Ingresses)
				in.Ingresses[j] = newVersion(in.Ingresses[j], func(c *netv1.Ingress) {
					c.Spec.Rules[0].HTTP.Paths[1].Path = fmt.Sprint("/api-", i)
				})
				i++
				res := Compile(in, opts)
				if len(res.Frontends) != 1 {
					b.Fatalf("%d frontends", len(res.Frontends))
				}
				if stage == "hash" {
					driver(res)
				}
			}
			if last.patched != b.N {
				b.Fatalf("%d passes patched, want %d", last.patched, b.N)
			}
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
