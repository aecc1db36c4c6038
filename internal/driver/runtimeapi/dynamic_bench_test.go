package runtimeapi

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// BenchmarkNewBackendServed times a route moved to a Service no route
// used before, from the pass's start to the first connection the new
// Service's node answers, side by side in one run: the backend rendered
// and loaded by a reload (every version), and created at runtime (3.4+;
// skipped on older versions). One op is one new backend; reloads/op
// counts the master's reloads.
//
//	HAPROXY_BIN="$(hack/haproxy-version.sh 3.4 | tail -n 1)" go test -run '^$' \
//	  -bench BenchmarkNewBackendServed -benchtime 20x ./internal/driver/runtimeapi/
func BenchmarkNewBackendServed(b *testing.B) {
	for _, mode := range []struct {
		name   string
		static bool
	}{{"reload", true}, {"created-at-runtime", false}} {
		b.Run(mode.name, func(b *testing.B) {
			lb := startLabWith(b, func(o *Options) { o.staticBackends = mode.static })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			if !mode.static {
				rt := haproxy.NewRuntime(lb.p.StatsSocket)
				info, err := rt.ShowInfo(ctx)
				_ = rt.Close()
				if v, _ := haproxy.ParseVersion(info["Version"]); err != nil || !v.DynamicBackends() {
					b.Skipf("HAProxy %q creates no backends at runtime (3.4+)", info["Version"])
				}
			}
			w := newPoolWorld(b)
			name := func(i int) string { return fmt.Sprintf("be_%d", i) }
			nodeOf := map[string]int{}
			for i := range b.N + 1 {
				nodeOf[name(i)] = i % len(w.nodes)
			}
			if _, err := lb.d.Apply(ctx, w.config([]string{name(0)}, nodeOf)); err != nil {
				b.Fatal(err)
			}
			reloads := lb.reloads(ctx, b)
			b.ResetTimer()
			for i := 1; i <= b.N; i++ {
				if _, err := lb.d.Apply(ctx, w.config([]string{name(i)}, nodeOf)); err != nil {
					b.Fatal(err)
				}
				want, last := w.nodes[nodeOf[name(i)]].Name, ""
				deadline := time.Now().Add(30 * time.Second)
				for {
					got, err := lab.Probe(fmt.Sprintf("127.0.0.1:%d", w.l1), 2*time.Second)
					if got == want {
						break
					}
					last = fmt.Sprintf("%q, %v", got, err)
					if time.Now().After(deadline) {
						b.Fatalf("%s: not served by %s in 30 s; last answer %s", name(i), want, last)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(lb.reloads(ctx, b)-reloads)/float64(b.N), "reloads/op")
		})
	}
}
