package status_test

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

// With --listeners=tproxy the Services have no frontend in the file:
// status lists them from the listener's map, with their addresses and
// ports; with --backend-pool too, the map names spares and the rows are
// still named after the Services (the pool file), their backend the spare.
func TestStatusListeners(t *testing.T) {
	for _, pool := range []bool{false, true} {
		out := statusListeners(t, pool)
		wants := []string{"default/web", "203.0.113.10:80", "[2001:db8::10]:80", "prod/db", "203.0.113.10:5432", "be_prod_db_5432"}
		if pool {
			wants = append(wants[:5], "_pool_")
		}
		for _, want := range wants {
			if !strings.Contains(out, want) {
				t.Errorf("pool %v: status lacks %q:\n%s", pool, want, out)
			}
		}
	}
}

// statusListeners is the output of status for world() behind the fixed
// listener, its backends in spares of a pool when pool is set.
func statusListeners(t *testing.T, pool bool) string {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	opts := render.Options{StatsSocket: haproxytest.StatsSocketPath(dir), ACLDir: filepath.Join(dir, "acl"),
		Listeners: render.Listeners{Mode: render.ListenersTProxy, Port: uint16(haproxytest.FreePort(t))}}
	cfg := world()
	cfg.Frontends[0].Binds = []model.Bind{{Addr: addr("203.0.113.10"), Port: 80}, {Addr: addr("2001:db8::10"), Port: 80}}
	cfg.Frontends[1].Binds = []model.Bind{{Addr: addr("203.0.113.10"), Port: 5432}}
	files := map[string][]byte{}
	if pool {
		occ, waiting := spares.Occupy(spares.State{}, cfg)
		s, _ := spares.Grow(occ, cfg, waiting, spares.Policy{Spares: 1, Other: 1, LowWater: 1})
		var b bytes.Buffer
		if err := spares.Encode(&b, s); err != nil {
			t.Fatal(err)
		}
		files[spares.FileBeside(cfgPath)] = b.Bytes()
		cfg = spares.View(s, cfg)
		for _, f := range render.SpareSources(cfg, opts) {
			for _, v6 := range []bool{false, true} {
				files[render.ACLFile(opts.ACLDir, f.Name, v6)] = render.ACLFileContent(f, v6)
			}
		}
	}
	layout, _ := plan.Assign(cfg, nil, true)
	if err := os.MkdirAll(opts.ACLDir, 0o755); err != nil {
		t.Fatal(err)
	}
	files[cfgPath] = render.Config(cfg, layout, opts)
	maps.Copy(files, render.ListenerMaps(cfg, opts, opts.ACLDir))
	for p, b := range files {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hap := haproxytest.Start(t, dir, cfgPath)
	var out, errOut bytes.Buffer
	cli.Main([]string{"haproxy-k8s-sync", "status", "--haproxy-config", cfgPath, "--stats-socket", hap.StatsSocket}, nil, &out, &errOut)
	return out.String() + errOut.String()
}
