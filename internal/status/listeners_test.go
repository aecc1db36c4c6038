package status_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// With --listeners=tproxy the Services have no frontend in the file:
// status lists them from the listener's map, with their addresses and
// ports.
func TestStatusListeners(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	opts := render.Options{StatsSocket: haproxytest.StatsSocketPath(dir), ACLDir: filepath.Join(dir, "acl"),
		Listeners: render.Listeners{Mode: render.ListenersTProxy, Port: uint16(haproxytest.FreePort(t))}}
	cfg := world()
	cfg.Frontends[0].Binds = []model.Bind{{Addr: addr("203.0.113.10"), Port: 80}, {Addr: addr("2001:db8::10"), Port: 80}}
	cfg.Frontends[1].Binds = []model.Bind{{Addr: addr("203.0.113.10"), Port: 5432}}
	layout, _ := plan.Assign(cfg, nil, true)
	listen, proxy := render.ListenerEntries(cfg, opts)
	if err := os.MkdirAll(opts.ACLDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for p, b := range map[string][]byte{cfgPath: render.Config(cfg, layout, opts),
		render.ListenerMapFile(opts.ACLDir): render.MapContent(listen), render.ProxyMapFile(opts.ACLDir): render.MapContent(proxy)} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hap := haproxytest.Start(t, dir, cfgPath)
	var out, errOut bytes.Buffer
	cli.Main([]string{"haproxy-k8s-sync", "status", "--haproxy-config", cfgPath, "--stats-socket", hap.StatsSocket}, nil, &out, &errOut)
	for _, want := range []string{"default/web", "203.0.113.10:80", "[2001:db8::10]:80", "prod/db", "203.0.113.10:5432", "be_prod_db_5432"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s%s", want, out.String(), errOut.String())
		}
	}
}
