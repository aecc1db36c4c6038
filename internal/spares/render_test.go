package spares

import (
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// pooled is a model with a per-port Service, a Gateway listener routing to
// two backends, servers that follow their nodes, and a Service of its own
// class (a health check), and the pool grown for it.
func pooledModel() (model.Config, State) {
	node := &model.Backend{Name: model.NodesBackend, Servers: []model.Server{{Addr: netip.MustParseAddr("10.0.0.1")}}}
	web := be("be_default_web_80", 0, "10.0.0.1:30080")
	web.TrackNodes = true
	api := be("be_default_api_443", 0, "10.0.0.1:30443")
	api.TrackNodes = true
	db := be("be_prod_db_5432", time.Hour, "10.0.0.1:31000")
	db.Check = model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 3}
	cfg := cfgOf(node, web, api, db)
	cfg.Frontends = []model.Frontend{
		{Name: "fe_default_web_80", Service: "default/web", Binds: []model.Bind{{Port: 18080}}, Backend: web.Name},
		{Name: "fe_prod_db_5432", Service: "prod/db", Binds: []model.Bind{{Port: 15432}}, Backend: db.Name},
		{Name: "gw_default_gw_tcp", Binds: []model.Bind{{Port: 18443}}, Routes: []model.Route{{Backends: []model.WeightedBackend{
			{Name: api.Name, Weight: 1}, {Name: web.Name, Weight: 1}}}}},
	}
	occ, waiting := Occupy(State{}, cfg)
	s, _ := Grow(occ, cfg, waiting, Policy{Spares: 2, Other: 1, LowWater: 1})
	return cfg, s
}

func renderOpts(*testing.T) render.Options {
	return render.Options{StatsSocket: "/run/haproxy/admin.sock", StateFile: "/run/haproxy/state", ACLDir: "/etc/haproxy/acl"}
}

// TestRenderedSpares: the spares as haproxy.cfg has them (golden), which
// HAProxy accepts; free slots of an unchecked class carry no check, so a
// spare costs no file descriptor (render.FileDescriptors).
func TestRenderedSpares(t *testing.T) {
	cfg, s := pooledModel()
	view := View(s, cfg)
	layout, _ := plan.Assign(view, nil, true)
	out := render.Config(view, layout, renderOpts(t))
	golden.Assert(t, "spares.cfg", out)

	// HAProxy accepts it, with its route map in place.
	opts := renderOpts(t)
	opts.ACLDir = t.TempDir()
	for _, f := range view.Frontends {
		for i, r := range f.Routes {
			if err := os.WriteFile(render.RouteMapFile(opts.ACLDir, f.Name, i), render.RouteMapContent(r), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	golden.HAProxyAccepts(t, render.Config(view, layout, opts))

	free := View(State{Classes: s.Classes, Spares: []Spare{{Name: "_pool_9", Class: 0}}}, model.Config{})
	fl, _ := plan.Assign(free, nil, true)
	if fds := render.FileDescriptors(free, fl, renderOpts(t), 1); fds.Checks != 0 {
		t.Errorf("a free spare of an unchecked class costs %d check fds", fds.Checks)
	}
}

// TestSpareChangesHandsWithoutReload: a spare taken, or given back, keeps
// the structure hash: no reload. A new model backend of a class with a
// free spare only changes slots and route map data.
func TestSpareChangesHandsWithoutReload(t *testing.T) {
	cfg, s := pooledModel()
	opts := renderOpts(t)
	view := View(s, cfg)
	layout, _ := plan.Assign(view, nil, true)
	hash := render.StructureHash(view, layout, opts)

	// A new backend routed to by the Gateway listener: it takes a free
	// spare of the default class.
	extra := be("be_default_new_80", 0, "10.0.0.1:30099")
	extra.TrackNodes = true
	cfg2 := cfgOf(append(append([]*model.Backend(nil), cfg.Backends...), extra)...)
	cfg2.Frontends = append([]model.Frontend(nil), cfg.Frontends...)
	cfg2.Frontends[2].Routes = []model.Route{{Backends: []model.WeightedBackend{{Name: extra.Name, Weight: 1}}}}
	s2, waiting := Occupy(s, cfg2)
	if len(waiting) > 0 {
		t.Fatalf("waiting %v", waiting)
	}
	if _, grow := Grow(s2, cfg2, waiting, Policy{Spares: 2, Other: 1, LowWater: 1}); grow {
		t.Fatal("the pool grew with a free spare left")
	}
	view2 := View(s2, cfg2)
	layout2, exhausted := plan.Assign(view2, layout, false)
	if len(exhausted) > 0 {
		t.Fatalf("exhausted %v", exhausted)
	}
	if h := render.StructureHash(view2, layout2, opts); h != hash {
		t.Errorf("taking a spare changed the structure: %s, was %s (%v)", h, hash, plan.Reasons(view, view2))
	}
	// And back: the backend goes, its spare is free again.
	s3, _ := Occupy(s2, cfg)
	view3 := View(s3, cfg)
	layout3, _ := plan.Assign(view3, layout2, false)
	if h := render.StructureHash(view3, layout3, opts); h != hash {
		t.Errorf("giving a spare back changed the structure")
	}
	sp := s2.HAProxyBackend(extra.Name)
	for i, sl := range layout3[sp] {
		if sl.Used {
			t.Errorf("the freed spare %s still has a server in %s", sp, model.SlotName(i))
		}
	}
}
