package status_test

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/status"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// Fixed addresses in this package's loopback range (127.84.250.0/24) make
// the golden files stable.
func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

// world: web has one server up (n1 answers), one down (n2 does not), one
// draining (n3, through the Runtime API); db has one server in
// maintenance (node out of service).
func world() model.Config {
	check := model.Check{Enabled: true, Inter: 100 * time.Millisecond, Rise: 1, Fall: 1}
	return model.Config{
		Frontends: []model.Frontend{
			{Name: "fe_default_web_80", Binds: []model.Bind{{Addr: addr("127.84.250.10"), Port: 18080}}, Backend: "be_default_web_80"},
			{Name: "fe_prod_db_5432", Binds: []model.Bind{{Addr: addr("127.84.250.10"), Port: 15432}}, Backend: "be_prod_db_5432"},
		},
		Backends: []*model.Backend{
			{Name: "be_default_web_80", Balance: "roundrobin", Check: check, Servers: []model.Server{
				{Addr: addr("127.84.250.1"), Port: 30080}, {Addr: addr("127.84.250.2"), Port: 30080}, {Addr: addr("127.84.250.3"), Port: 30080}}},
			{Name: "be_prod_db_5432", Balance: "roundrobin", Check: check, Servers: []model.Server{
				{Addr: addr("127.84.250.1"), Port: 30432, Maint: true}}},
		},
	}
}

func TestStatusAgainstRealHAProxy(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	opts := render.Options{StatsSocket: haproxytest.StatsSocketPath(dir)}
	cfg := world()
	layout, _ := plan.Assign(cfg, nil, true)
	if err := os.WriteFile(cfgPath, render.Config(cfg, layout, opts), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"127.84.250.1", "127.84.250.3"} {
		node := lab.NewNodeServer(n, n)
		if err := node.Listen(30080); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(node.Close)
	}
	hap := haproxytest.Start(t, dir, cfgPath)
	rt := haproxy.NewRuntime(hap.StatsSocket)
	defer rt.Close()
	if _, err := rt.ExecChecked(context.Background(), []string{"set server be_default_web_80/s3 state drain"}); err != nil {
		t.Fatal(err)
	}

	var rep status.Report
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		if rep, err = status.Collect(context.Background(), cfgPath, hap.StatsSocket); err != nil {
			t.Fatal(err)
		}
		if len(rep.Rows) == 2 && rep.Rows[0].Down == 1 && rep.Rows[0].Up == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health checks did not settle: %+v", rep.Rows)
		}
		time.Sleep(50 * time.Millisecond) // poll interval
	}
	if !rep.InSync || rep.Healthy() {
		t.Errorf("in sync %v, healthy %v: want in sync and unhealthy (a server is down)", rep.InSync, rep.Healthy())
	}
	for i := range rep.Rows {
		if rep.Rows[i].LastChange < 0 || rep.Rows[i].LastChange > time.Minute {
			t.Errorf("%s: last change %v", rep.Rows[i].Frontend, rep.Rows[i].LastChange)
		}
		rep.Rows[i].LastChange = 0 // varies: not in the golden files
	}
	hash := rep.FileHash
	stable := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(hash), []byte("HASH")) }
	var table, js bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "status.txt", stable(table.Bytes()))
	golden.Assert(t, "status.json", stable(js.Bytes()))

	// The command: exit 1 while a server is down; -o json prints JSON.
	var out, errOut bytes.Buffer
	code := cli.Main([]string{"haproxy-k8s-sync", "status", "--haproxy-config", cfgPath, "--stats-socket", hap.StatsSocket, "-o", "json"}, nil, &out, &errOut)
	if code == 0 || !strings.Contains(out.String(), `"healthy": false`) {
		t.Errorf("status exited %d with:\n%s%s", code, out.String(), errOut.String())
	}

	// The file changes but HAProxy was not reloaded: out of sync.
	changed := world()
	changed.Backends[1].Balance = "leastconn"
	if err := os.WriteFile(cfgPath, render.Config(changed, layout, opts), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := status.Collect(context.Background(), cfgPath, hap.StatsSocket)
	if err != nil {
		t.Fatal(err)
	}
	if rep.InSync || rep.FileHash == rep.RunningHash {
		t.Errorf("a changed file reported in sync: %+v", rep)
	}
}

// Up and in sync: exit 0.
func TestStatusHealthy(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	opts := render.Options{StatsSocket: haproxytest.StatsSocketPath(dir)}
	cfg := world()
	cfg.Frontends, cfg.Backends = cfg.Frontends[1:], cfg.Backends[1:]
	cfg.Backends[0].Servers[0].Maint = false
	cfg.Backends[0].Check.Enabled = false // no check: in service
	layout, _ := plan.Assign(cfg, nil, true)
	if err := os.WriteFile(cfgPath, render.Config(cfg, layout, opts), 0o644); err != nil {
		t.Fatal(err)
	}
	hap := haproxytest.Start(t, dir, cfgPath)
	var out, errOut bytes.Buffer
	if code := cli.Main([]string{"haproxy-k8s-sync", "status", "--haproxy-config", cfgPath, "--stats-socket", hap.StatsSocket}, nil, &out, &errOut); code != 0 {
		t.Errorf("status exited %d:\n%s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "prod/db") || !strings.Contains(out.String(), "in sync") {
		t.Errorf("status output:\n%s", out.String())
	}
}
