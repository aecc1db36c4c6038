package spares

import (
	"bytes"
	"net/netip"
	"os"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// TestSpareRangesKeepStructureBehindListener: behind the fixed listener
// (tproxy mode, backends marked by SourceMarks, the pool keeping the
// default class's twin), a new Service taking a spare, restricted or
// not, keeps the structure hash: a restricted one takes a spare of the
// twin class, whose rule reads files of its own, whose contents are
// data; an unrestricted one a spare with no rule and no files. A Service
// whose ranges go moves back with no structural change. HAProxy accepts
// the config with those files.
func TestSpareRangesKeepStructureBehindListener(t *testing.T) {
	opts := render.Options{StatsSocket: "/run/haproxy/admin.sock", StateFile: "/run/haproxy/state", ACLDir: "/etc/haproxy/acl",
		Listeners: render.Listeners{Mode: render.ListenersTProxy}}
	policy := Policy{Spares: 3, Other: 2, LowWater: 1, SourceTwin: true}
	var marks SourceMarks
	svc := func(name, addr string, ranges ...string) (model.Frontend, *model.Backend) {
		b := be("be_"+name, 0, "10.0.0.1:30080")
		f := model.Frontend{Name: "fe_" + name, Service: b.Service, Backend: b.Name,
			Binds: []model.Bind{{Addr: netip.MustParseAddr(addr), Port: 80, Transparent: true}}}
		for _, r := range ranges {
			f.SourceRanges = append(f.SourceRanges, netip.MustParsePrefix(r))
		}
		return f, b
	}
	feA, beA := svc("a", "192.0.2.10")
	cfg := cfgOf(beA)
	cfg.Frontends = []model.Frontend{feA}
	cfg = marks.Of(cfg, nil, opts.Listened)
	occ, waiting := Occupy(State{}, cfg)
	s, _ := Grow(occ, cfg, waiting, policy)
	view := View(s, cfg)
	layout, _ := plan.Assign(view, nil, true)
	hash := render.StructureHash(view, layout, opts)

	if got := len(render.SpareSources(view, opts)); got != 2 {
		t.Errorf("%d spares check sources, want 2 (the twin class's free ones): the others need no files", got)
	}
	feB, beB := svc("b", "192.0.2.11")
	feC, beC := svc("c", "192.0.2.12", "198.51.100.0/24")
	feCOpen, _ := svc("c", "192.0.2.12")
	for _, tc := range []struct {
		name string
		fs   []model.Frontend
		bs   []*model.Backend
	}{
		{"an unrestricted Service", []model.Frontend{feA, feB}, []*model.Backend{beA, beB}},
		{"a restricted Service", []model.Frontend{feA, feC}, []*model.Backend{beA, beC}},
		{"both", []model.Frontend{feA, feB, feC}, []*model.Backend{beA, beB, beC}},
		{"c's ranges gone", []model.Frontend{feA, feB, feCOpen}, []*model.Backend{beA, beB, beC}},
	} {
		cfg2 := cfgOf(tc.bs...)
		cfg2.Frontends = tc.fs
		cfg2 = marks.Of(cfg2, nil, opts.Listened)
		s2, waiting := Occupy(s, cfg2)
		if _, grow := Grow(s2, cfg2, waiting, policy); grow || len(waiting) > 0 {
			t.Fatalf("%s: the pool grew (waiting %v)", tc.name, waiting)
		}
		view2 := View(s2, cfg2)
		layout2, _ := plan.Assign(view2, layout, false)
		if h := render.StructureHash(view2, layout2, opts); h != hash {
			t.Errorf("%s taking a spare changed the structure", tc.name)
		}
		if tc.name == "both" {
			s = s2 // c's ranges go from here
		}
		if tc.name != "both" {
			continue
		}
		dir := t.TempDir()
		o := opts
		o.ACLDir = dir
		files := render.ListenerMaps(model.Config{}, o, dir) // empty: the spares' check reads none
		for _, f := range render.SpareSources(view2, o) {
			for _, v6 := range []bool{false, true} {
				files[render.ACLFile(dir, f.Name, v6)] = render.ACLFileContent(f, v6)
			}
		}
		for p, b := range files {
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out := render.Config(view2, layout2, o)
		if !bytes.Contains(out, []byte(render.ACLFileName(s2.HAProxyBackend(beC.Name), false))) {
			t.Errorf("c's spare reads no files of its own")
		}
		golden.HAProxyAccepts(t, out)
	}
}
