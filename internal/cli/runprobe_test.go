package cli

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/tproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// probeRun is `run --listeners=auto` with its kernel side in a namespace
// of the test's own (--listener-netns, where the probe passes), a local
// HAProxy's files in a temporary directory, and args; it returns run's
// error and log, and whether the namespace holds the TPROXY table and
// the policy routing's rule afterwards.
func probeRun(t *testing.T, lab *netlab.Lab, args ...string) (log string, table, rule bool, err error) {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := unreachableKubeconfig(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	err = Run(ctx, append([]string{"--kubeconfig", kubeconfig, "--haproxy-bin", haproxytest.Bin(),
		"--haproxy-config", filepath.Join(dir, "haproxy.cfg"), "--master-socket", filepath.Join(dir, "master.sock"),
		"--stats-socket", filepath.Join(dir, "stats.sock"), "--state-file", filepath.Join(dir, "state"),
		"--udp=off", "--listeners=auto", "--listener-netns", netlab.Path(lab.LB)}, args...), env(nil), &out)
	_, terr := lab.ListTable(lab.LB, tproxy.Table)
	rules, rerr := lab.Exec(lab.LB, "ip", "rule", "show")
	if rerr != nil {
		t.Fatalf("ip rule show: %v: %s", rerr, rules)
	}
	return out.String(), terr == nil, strings.Contains(rules, "fwmark"), err
}

// run with a bad flag fails with an error naming it before the probe of
// --listeners=auto touches the kernel: the namespace the probe would set
// up holds no TPROXY table and no policy routing rule afterwards. Each of
// these flags was refused only after the probe before run checked every
// flag first (checkFlags).
func TestRunBadFlagTouchesNoKernel(t *testing.T) {
	lab := netlab.New(t, 0)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"apply", []string{"--apply=sometimes"}, "--apply: want hybrid or reload"},
		{"pool low water above auto's pool", []string{"--backend-pool-low-water=17"}, "--backend-pool-low-water: 17 is more than --backend-pool (16)"},
		{"UDP forwarding", []string{"--udp-ip-forward=maybe"}, "--udp-ip-forward: want require or enable"},
		{"UDP health", []string{"--udp-health=ping"}, "ping"},
		{"published address", []string{"--publish-address=192.0.2.300"}, "--publish-address"},
		{"kubeconfig", []string{"--kubeconfig=/nonexistent/kubeconfig"}, "kubeconfig /nonexistent/kubeconfig"},
		{"haproxy binary", []string{"--haproxy-bin=/nonexistent/haproxy"}, "--haproxy-bin /nonexistent/haproxy"},
		{"gateway mode UDP forwarding", []string{"--mode=gateway", "--udp-ip-forward=maybe"}, "--udp-ip-forward: want require or enable"},
		{"gateway mode apply", []string{"--mode=gateway", "--apply=sometimes"}, "--apply: want hybrid or reload"},
		{"the HTTP listener on the TCP listener's port", []string{"--mode=gateway", "--http-listener", "--http-listener-port=15080"}, "--http-listener-port 15080: the TCP listener's --listener-port too"},
		// The HTTP listener is on by default: its port is taken too.
		{"the TCP listener on the default HTTP listener's port", []string{"--mode=gateway", "--listener-port=15081"}, "--http-listener-port 15081: the TCP listener's --listener-port too"},
		{"the HTTPS listener on the TCP listener's port", []string{"--mode=gateway", "--https-listener-port=15080"}, "--https-listener-port 15080: the TCP listener's --listener-port too"},
		{"the HTTPS listener on the HTTP listener's port", []string{"--mode=gateway", "--https-listener-port=15081"}, "--https-listener-port 15081: the HTTP listener's --http-listener-port too"},
		{"the TCP listener on the default HTTPS listener's port", []string{"--mode=gateway", "--listener-port=15443"}, "--https-listener-port 15443: the TCP listener's --listener-port too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, table, rule, err := probeRun(t, lab, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run %v: %v, want an error naming %q\n%s", tc.args, err, tc.want, log)
			}
			if table || rule {
				t.Errorf("run %v refused: TPROXY table left %v, policy routing rule left %v; want neither\n%s", tc.args, table, rule, log)
			}
			if strings.Contains(log, "TCP listeners chosen") {
				t.Errorf("run %v probed before refusing its flags:\n%s", tc.args, log)
			}
		})
	}
}

// run failing after the probe of --listeners=auto chose tproxy (the
// profiles' address taken: before the drivers are built; the metrics
// address taken: after) removes what the probe put in place, and only
// that: a table and policy routing an earlier controller left, serving
// traffic, stay. So does run with --listeners=tproxy, whose driver puts
// the policy routing in place when it is built.
func TestRunFailureAfterProbeUndoesIt(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	pprof, metrics := []string{"--pprof-address", busy.Addr().String()}, []string{"--metrics-address", busy.Addr().String()}
	for _, tc := range []struct {
		name   string
		args   []string
		before bool   // an earlier controller's table and policy routing
		said   string // in run's log: the kernel's side was set up
	}{
		{"auto pprof taken", pprof, false, "chose=tproxy"},
		{"auto pprof taken earlier table kept", pprof, true, "chose=tproxy"},
		{"auto metrics taken", metrics, false, "one fixed listener through TPROXY"},
		{"auto metrics taken earlier table kept", metrics, true, "one fixed listener through TPROXY"},
		{"tproxy metrics taken", append([]string{"--listeners=tproxy"}, metrics...), false, "one fixed listener through TPROXY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lab := netlab.New(t, 0)
			if tc.before {
				ropts := render.Options{ACLDir: "/etc/haproxy/acl", Listeners: render.Listeners{Mode: render.ListenersTProxy}}
				if _, err := tproxy.Probe(tproxy.Options{NetNS: netlab.Path(lab.LB), Render: ropts}); err != nil {
					t.Fatal(err)
				}
			}
			log, table, rule, err := probeRun(t, lab, tc.args...)
			if err == nil || !strings.Contains(err.Error(), "address already in use") {
				t.Fatalf("run: %v, want an address in use\n%s", err, log)
			}
			if !strings.Contains(log, tc.said) {
				t.Fatalf("run did not set TPROXY up (%q not logged):\n%s", tc.said, log)
			}
			if table != tc.before || rule != tc.before {
				t.Errorf("after run failed: TPROXY table %v, policy routing rule %v; want both %v\n%s", table, rule, tc.before, log)
			}
		})
	}
}
