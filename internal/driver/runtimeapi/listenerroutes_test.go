package runtimeapi

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// TestListenedTCPRouteFiles: in tproxy mode a gateway TCP listener the
// fixed listener serves has its keys in the listener's routes map and its
// draw in its backends map, and no route map of its own (no rule reads
// one); one it cannot serve (on every address) keeps its route maps and
// reaches neither; in ports mode both keep theirs.
func TestListenedTCPRouteFiles(t *testing.T) {
	route := []model.Route{{Backends: []model.WeightedBackend{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}}}}
	cfg := model.Config{Frontends: []model.Frontend{
		{Name: "gw_default_every_9000", Binds: []model.Bind{{Port: 9000}}, Routes: route},
		{Name: "gw_default_gw_9000", Binds: []model.Bind{{Addr: netip.MustParseAddr("192.0.2.20"), Port: 9000}}, Routes: route},
	}}
	tp := render.Options{ACLDir: "/acl", Listeners: render.Listeners{Mode: render.ListenersTProxy}}
	ports := render.Options{ACLDir: "/acl"}
	for _, tc := range []struct {
		name        string
		o           render.Options
		own         []string // frontends with route maps of their own
		routesEntry string   // a line of the listener's routes map ("": none)
	}{
		{"tproxy", tp, []string{"gw_default_every_9000"}, "192.0.2.20:9000 "},
		{"ports", ports, []string{"gw_default_every_9000", "gw_default_gw_9000"}, ""},
	} {
		files := PatternFiles(cfg, tc.o)
		for _, f := range cfg.Frontends {
			_, has := files[render.RouteMapFile("/acl", f.Name, 0)]
			want := strings.Contains(strings.Join(tc.own, " "), f.Name)
			if has != want {
				t.Errorf("%s: %s has a route map of its own: %v, want %v", tc.name, f.Name, has, want)
			}
		}
		routes, backends := string(files[render.ListenerRoutesMapFile("/acl")]), string(files[render.ListenerBackendsMapFile("/acl")])
		if tc.routesEntry == "" {
			if routes != "" || backends != "" {
				t.Errorf("%s: listener route maps %q %q, want none", tc.name, routes, backends)
			}
			continue
		}
		if !strings.HasPrefix(routes, tc.routesEntry) || strings.Count(routes, "\n") != 1 {
			t.Errorf("%s: listener routes map %q, want one line %q...", tc.name, routes, tc.routesEntry)
		}
		if strings.Count(backends, "\n") != 2 || !strings.Contains(backends, " a\n") || !strings.Contains(backends, " b\n") {
			t.Errorf("%s: listener backends map %q, want a range for a and one for b", tc.name, backends)
		}
	}
}
