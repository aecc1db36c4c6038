package runtimeapi

import (
	"net/netip"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// TestReloadReasonBehindListener: in tproxy mode a new Service is a key
// of the fixed listener's map, not a frontend: the reload that adds the
// backend pool's spares it takes counts as backend_added, not
// frontend_added (TestMetricsCountWhatHappens counted frontend_added for
// it). A Service that leaves the listener for a frontend of its own (on
// every address) is one added; in ports mode a new Service is one too.
func TestReloadReasonBehindListener(t *testing.T) {
	svc := func(everyAddr bool) model.Frontend {
		b := model.Bind{Addr: netip.MustParseAddr("192.0.2.10"), Port: 8080}
		if everyAddr { // no key the listener could have
			b.Addr = netip.Addr{}
		}
		return model.Frontend{Name: "fe_default_web_8080", Backend: "_pool_0", Binds: []model.Bind{b}}
	}
	nodes := &model.Backend{Name: "_nodes", Balance: "roundrobin"}
	pool := &model.Backend{Name: "_pool_0", Balance: "roundrobin"}
	empty := model.Config{Frontends: []model.Frontend{}, Backends: []*model.Backend{}}
	tp := render.Options{ACLDir: "/acl", Listeners: render.Listeners{Mode: render.ListenersTProxy}}
	for _, tc := range []struct {
		name             string
		o                render.Options
		running, desired model.Config
		want             string
	}{
		{"tproxy: first Service", tp, empty,
			model.Config{Frontends: []model.Frontend{svc(false)}, Backends: []*model.Backend{nodes, pool}}, metrics.ReasonBackendAdded},
		{"tproxy: on every address", tp,
			model.Config{Frontends: []model.Frontend{svc(false)}, Backends: []*model.Backend{nodes, pool}},
			model.Config{Frontends: []model.Frontend{svc(true)}, Backends: []*model.Backend{nodes, pool}}, metrics.ReasonFrontendAdded},
		{"ports: first Service", render.Options{ACLDir: "/acl"}, empty,
			model.Config{Frontends: []model.Frontend{svc(false)}, Backends: []*model.Backend{nodes, pool}}, metrics.ReasonFrontendAdded},
	} {
		d := &HAProxy{opts: Options{Render: tc.o}, running: tc.running, hash: "h"}
		r := d.structureReasons(tc.desired)
		if got := metrics.ReloadReason(r); got != tc.want {
			t.Errorf("%s: reload reason %s (%v), want %s", tc.name, got, r, tc.want)
		}
	}
}
