package dataplaneapi

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// BenchmarkRangeChange: the source ranges of one Service change, among
// 1,000 Services (every-Service mode), each pass until HAProxy enforces
// them; reports the reloads per change (want 0). Against a real API when
// HKS_DATAPLANE_URL (and _USERNAME, _PASSWORD; HKS_DATAPLANE_MASTER_SOCKET
// to count reloads from HAProxy's master) is set, else the test server
// with the real API's measured cost. On a real API it creates 1,000
// backends and one frontend, and deletes every section named as the
// driver owns them when it ends: use an API that serves nothing else.
func BenchmarkRangeChange(b *testing.B) {
	api := newBenchAPI(b, time.Minute)
	c := api.c
	reloads := func() int { return api.reloads(b) }
	ctx := context.Background()
	d := New(Options{Client: c, ReloadPoll: 10 * time.Millisecond})
	defer d.Close()
	l, err := net.Listen("tcp", "127.81.26.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := uint16(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	cfg := bigCfg(1000, -1)
	cfg.Frontends = []model.Frontend{{Name: "fe_default_svc00000_80", Service: "default/svc00000", Backend: cfg.Backends[0].Name,
		Binds: []model.Bind{{Addr: mustAddr("127.81.26.1"), Port: port}}, SourceRanges: prefixes("192.0.2.0/24")}}
	if _, err := d.Apply(ctx, cfg); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if _, err := d.Apply(ctx, model.Config{}); err != nil {
			b.Errorf("deleting the sections: %v", err)
		}
	})
	other := cfg
	other.Frontends = slices.Clone(cfg.Frontends)
	other.Frontends[0].SourceRanges = prefixes("198.51.100.0/24", "2001:db8::/32")
	r0 := reloads()
	b.ResetTimer()
	for i := range b.N {
		want := other
		if i%2 == 1 {
			want = cfg
		}
		if res, err := d.Apply(ctx, want); err != nil || res.Reloaded {
			b.Fatalf("%v %v", err, res.Reasons)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(reloads()-r0)/float64(b.N), "reloads/op")
}
