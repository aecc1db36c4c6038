package status_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane/dataplanetest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/dataplaneapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/status"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// The Data Plane API tests use 127.89.0.0/24; the frontends' port comes
// from the kernel and is PORT in the golden files.
const dpUser, dpPass = "admin", "status-test-password"

func freePort(t *testing.T) uint16 {
	t.Helper()
	l, err := net.Listen("tcp", "127.89.0.10:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

// dpWorld: web has three servers, one draining (terminating); db one.
func dpWorld(port uint16) model.Config {
	check := model.Check{Enabled: true, Inter: 2 * time.Second, Rise: 2, Fall: 3}
	return model.Config{
		Frontends: []model.Frontend{
			{Name: "fe_default_web_80", Binds: []model.Bind{{Addr: addr("127.89.0.10"), Port: port}}, Backend: "be_default_web_80"},
			{Name: "fe_prod_db_5432", Binds: []model.Bind{{Addr: addr("127.89.0.11"), Port: port}}, Backend: "be_prod_db_5432"},
		},
		Backends: []*model.Backend{
			{Name: "be_default_web_80", Balance: "roundrobin", Check: check, Servers: []model.Server{
				{Addr: addr("127.89.0.1"), Port: 30080}, {Addr: addr("127.89.0.2"), Port: 30080}, {Addr: addr("127.89.0.3"), Port: 30080, Drain: true}}},
			{Name: "be_prod_db_5432", Balance: "roundrobin", Check: check, Servers: []model.Server{
				{Addr: addr("127.89.0.1"), Port: 30432}}},
		},
	}
}

// dpCLI runs `status --dataplane-url` and returns its exit code and output.
func dpCLI(t *testing.T, url, pwFile string, extra ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	args := append([]string{"haproxy-k8s-sync", "status", "--dataplane-url", url, "--dataplane-username", dpUser, "--dataplane-password-file", pwFile}, extra...)
	code := cli.Main(args, nil, &out, &errOut)
	if strings.Contains(out.String()+errOut.String(), dpPass) {
		t.Errorf("the password was printed")
	}
	return code, out.String() + errOut.String()
}

func writeReports(t *testing.T, rep status.Report, name string, port uint16) {
	t.Helper()
	var table, js bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	p := []byte(":" + strconv.Itoa(int(port)))
	golden.Assert(t, name+".txt", bytes.ReplaceAll(table.Bytes(), p, []byte(":PORT")))
	golden.Assert(t, name+".json", bytes.ReplaceAll(js.Bytes(), p, []byte(":PORT")))
}

func TestStatusThroughDataplaneAPI(t *testing.T) {
	ctx := context.Background()
	srv := dataplanetest.Start(t, dataplanetest.Options{Users: map[string]string{dpUser: dpPass}})
	// The operator's own backend is not the controller's: no row.
	srv.Load([]dataplanetest.Section{{Object: dataplane.Object{"name": "be_operator", "mode": "tcp"}}}, nil)
	c, err := dataplane.New(dataplane.Options{URL: srv.URL, Username: dpUser, Password: dpPass, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	pwFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pwFile, []byte(dpPass+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	if _, err := dataplaneapi.New(dataplaneapi.Options{Client: c}).Apply(ctx, dpWorld(port)); err != nil {
		t.Fatal(err)
	}

	rep, err := status.CollectDataplane(ctx, c, status.DataplaneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.InSync || !rep.Healthy() {
		t.Errorf("after a pass: in sync %v, healthy %v, problems %q: want both", rep.InSync, rep.Healthy(), rep.Problems)
	}
	writeReports(t, rep, "dataplane", port)
	if code, out := dpCLI(t, srv.URL, pwFile); code != 0 {
		t.Errorf("status exited %d while in sync and healthy:\n%s", code, out)
	}

	// Out of sync: a server in service in the configuration was put in
	// maintenance at runtime, and a transaction was left open.
	if err := c.SetRuntimeState(ctx, "be_prod_db_5432", "s1", "maint"); err != nil {
		t.Fatal(err)
	}
	v, err := c.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := c.OpenTx(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	rep, err = status.CollectDataplane(ctx, c, status.DataplaneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.InSync || rep.Healthy() || len(rep.Problems) != 2 {
		t.Errorf("in sync %v, healthy %v, problems %q: want out of sync for two reasons", rep.InSync, rep.Healthy(), rep.Problems)
	}
	for i, p := range rep.Problems {
		rep.Problems[i] = strings.ReplaceAll(p, tx.ID, "TXID")
	}
	writeReports(t, rep, "dataplane-out-of-sync", port)
	code, out := dpCLI(t, srv.URL, pwFile, "-o", "json")
	if code != 1 || !strings.Contains(out, `"inSync": false`) || !strings.Contains(out, `"healthy": false`) {
		t.Errorf("status -o json exited %d out of sync, want 1:\n%s", code, out)
	}

	// Single-Service mode: the operator's backend named as run names it.
	t.Setenv("HAPROXY_BACKEND_NAME", "be_operator")
	code, out = dpCLI(t, srv.URL, pwFile, "--service", "ingress/ingress-nginx", "-o", "json")
	if code != 1 || !strings.Contains(out, `"backend": "be_operator"`) || !strings.Contains(out, `"service": "ingress/ingress-nginx"`) ||
		strings.Contains(out, "be_default_web_80") {
		t.Errorf("single-Service status exited %d (want 1: a transaction is open):\n%s", code, out)
	}
	// Wrong credentials: an error, not a report.
	if code, out := dpCLI(t, srv.URL, filepath.Join(t.TempDir(), "absent")); code != 1 || !strings.Contains(out, "password") {
		t.Errorf("absent password file: exit %d:\n%s", code, out)
	}
}

// Servers following their node (_nodes, track): a node in maintenance
// makes its followers read "maint" at runtime while configured in
// service; that is the node's state, not a difference.
func TestStatusDataplaneNodeOut(t *testing.T) {
	api := dataplanetest.Start(t, dataplanetest.Options{Users: map[string]string{dpUser: dpPass}})
	c, err := dataplane.New(dataplane.Options{URL: api.URL, Username: dpUser, Password: dpPass})
	if err != nil {
		t.Fatal(err)
	}
	cfg := dpWorld(freePort(t))
	web := *cfg.Backends[0]
	web.TrackNodes, web.Check = true, model.Check{}
	nodes := &model.Backend{Name: model.NodesBackend, Servers: []model.Server{{Addr: addr("127.89.0.1")}, {Addr: addr("127.89.0.2")}, {Addr: addr("127.89.0.3")}}}
	cfg.Backends = []*model.Backend{nodes, &web, cfg.Backends[1]}
	d := dataplaneapi.New(dataplaneapi.Options{Client: c})
	defer d.Close()
	ctx := context.Background()
	for i, down := range []bool{false, true} {
		n := *nodes
		n.Servers = []model.Server{{Addr: addr("127.89.0.1")}, {Addr: addr("127.89.0.2"), Maint: down}, {Addr: addr("127.89.0.3")}}
		cfg.Backends[0] = &n
		if _, err := d.Apply(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		if err := d.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		rep, err := status.CollectDataplane(ctx, c, status.DataplaneOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.InSync {
			t.Errorf("pass %d (node out %v): not in sync: %v", i, down, rep.Problems)
		}
		for _, r := range rep.Rows {
			if r.Backend == web.Name && (r.Maint == 1) != down {
				t.Errorf("node out %v: %s row %+v", down, web.Name, r)
			}
		}
	}
}
