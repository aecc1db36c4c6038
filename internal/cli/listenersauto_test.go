package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/tproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// envProbeChild, when set to a network namespace's path, makes
// TestProbeChild run tproxy.Probe there and print its outcome: the
// process TestAutoListeners starts without CAP_NET_ADMIN.
const envProbeChild = "HKS_TEST_PROBE_NETNS"

// --listeners=auto: per-port frontends where nothing runs the kernel's
// side or the controller cannot set TPROXY up (a real probe in a process
// without CAP_NET_ADMIN: nothing left behind), tproxy where it can (a
// real probe as root in a namespace of the test's own: the table and the
// policy routing in place for the driver).
func TestAutoListeners(t *testing.T) {
	lab := netlab.New(t, 0)
	ns := netlab.Path(lab.LB)
	ropts := render.Options{ACLDir: "/etc/haproxy/acl", Listeners: render.Listeners{Mode: render.ListenersTProxy}}
	asRoot := func() error { _, err := tproxy.Probe(tproxy.Options{NetNS: ns, Render: ropts}); return err }
	withoutNetAdmin := func() error { return probeWithoutNetAdmin(t, ns) }
	never := func() error { return errors.New("probed") }
	for _, tc := range []struct {
		name       string
		mode       string
		dataplane  bool
		instances  bool
		aclDir     string
		probe      func() error
		want, why  string
		tableAfter bool
	}{
		{"apiserver mode", modeAPIServer, false, false, "/etc/haproxy/acl", never, render.ListenersPorts, "apiserver mode", false},
		{"Data Plane API", modeServices, true, false, "/etc/haproxy/acl", never, render.ListenersPorts, "Data Plane API", false},
		{"instances", modeGateway, false, true, "/etc/haproxy/acl", never, render.ListenersPorts, "--instance", false},
		{"no map directory", modeServices, false, false, "", never, render.ListenersPorts, "listener's maps", false},
		{"no CAP_NET_ADMIN", modeServices, false, false, "/etc/haproxy/acl", withoutNetAdmin, render.ListenersPorts, "operation not permitted", false},
		{"root in its namespace", modeServices, false, false, "/etc/haproxy/acl", asRoot, render.ListenersTProxy, "TPROXY set up", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := autoListeners(tc.mode, tc.dataplane, tc.instances, tc.aclDir, tc.probe)
			if got != tc.want || !strings.Contains(why, tc.why) {
				t.Errorf("chose %s (%s), want %s (%s)", got, why, tc.want, tc.why)
			}
			_, err := lab.ListTable(lab.LB, tproxy.Table)
			rules, _ := lab.Exec(lab.LB, "ip", "rule", "show")
			if tc.tableAfter != (err == nil) || tc.tableAfter != strings.Contains(rules, "fwmark") {
				t.Errorf("after the probe: table listed %v (%v), policy routing rule %v; want both %v:\n%s", err == nil, err, strings.Contains(rules, "fwmark"), tc.tableAfter, rules)
			}
		})
	}
}

// probeWithoutNetAdmin runs tproxy.Probe in ns from this test binary
// started again without CAP_NET_ADMIN (setpriv drops it from the
// bounding set, so the exec'd process has none), and returns its error.
func probeWithoutNetAdmin(t *testing.T, ns string) error {
	t.Helper()
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skipf("no setpriv: %v", err)
	}
	cmd := exec.Command(setpriv, "--bounding-set=-net_admin", "--inh-caps=-net_admin", "--",
		os.Args[0], "-test.run=^TestProbeChild$", "-test.v")
	cmd.Env = append(os.Environ(), envProbeChild+"="+ns)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the probe without CAP_NET_ADMIN: %v:\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if r, ok := strings.CutPrefix(strings.TrimSpace(line), "probe: "); ok {
			if r == "ok" {
				return nil
			}
			return errors.New(r)
		}
	}
	t.Fatalf("the probe without CAP_NET_ADMIN said nothing:\n%s", out)
	return nil
}

// TestProbeChild is probeWithoutNetAdmin's process; skipped otherwise.
func TestProbeChild(t *testing.T) {
	ns := os.Getenv(envProbeChild)
	if ns == "" {
		t.Skip("run by TestAutoListeners")
	}
	ropts := render.Options{ACLDir: "/etc/haproxy/acl", Listeners: render.Listeners{Mode: render.ListenersTProxy}}
	if _, err := tproxy.Probe(tproxy.Options{NetNS: ns, Render: ropts}); err != nil {
		fmt.Println("probe:", strings.ReplaceAll(err.Error(), "\n", " "))
		return
	}
	fmt.Println("probe: ok")
}

// render and init with --listeners=auto write the per-port files and say
// so: they run nowhere in particular.
func TestAutoListenersOffline(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := renderCmd([]string{"-f", "testdata/pools.yaml", "--stats-socket", "/run/hks/admin.sock", "--state-file", "/var/lib/hks/state",
		"-o", dir, "--listeners", "auto"}, env(nil), nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "--listeners=auto: per-port frontends") {
		t.Errorf("render --listeners=auto did not say what it wrote:\n%s", stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "tproxy.nft")); !os.IsNotExist(err) {
		t.Errorf("render --listeners=auto wrote tproxy.nft (%v)", err)
	}
	cfg := filepath.Join(dir, "init", "haproxy.cfg")
	stderr.Reset()
	if err := initCmd([]string{"--haproxy-config", cfg, "--stats-socket", filepath.Join(dir, "admin.sock"), "--state-file", filepath.Join(dir, "state"),
		"--listeners", "auto"}, env(nil), &stderr); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(cfg); err != nil || bytes.Contains(b, []byte("frontend _listeners")) {
		t.Errorf("init --listeners=auto: %v, a fixed listener in:\n%s", err, b)
	}
	if !strings.Contains(stderr.String(), "--listeners=auto: per-port frontends") {
		t.Errorf("init --listeners=auto did not say what it wrote:\n%s", stderr.String())
	}
}

// run resolves --listeners=auto before anything reads the mode, and says
// what it chose and why in one log line: tproxy with the kernel's side in
// --listener-netns where the probe passes there, ports where it fails (a
// namespace that does not exist); another mode is left as given.
func TestResolveListeners(t *testing.T) {
	lab := netlab.New(t, 0)
	for _, tc := range []struct {
		name, mode, netns, want, said string
	}{
		{"auto-can", listenersAuto, netlab.Path(lab.LB), render.ListenersTProxy, "chose=tproxy"},
		{"auto-cannot", listenersAuto, filepath.Join(t.TempDir(), "no-such-netns"), render.ListenersPorts, "chose=ports why=\"TPROXY cannot be set up here"},
		{"ports-given", render.ListenersPorts, netlab.Path(lab.LB), render.ListenersPorts, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &runFlags{config: filepath.Join(t.TempDir(), "haproxy.cfg")}
			f.mode = modeServices
			f.listeners = listenerFlags{mode: tc.mode, port: render.DefaultListenerPort, netns: tc.netns}
			var logs bytes.Buffer
			log, err := newLogger(&logs, "info", "text")
			if err != nil {
				t.Fatal(err)
			}
			f.resolveListeners(false, log)
			if f.listeners.mode != tc.want {
				t.Errorf("mode %s, want %s", f.listeners.mode, tc.want)
			}
			if tc.said == "" && logs.Len() > 0 || !strings.Contains(logs.String(), tc.said) {
				t.Errorf("logged %q, want %q", logs.String(), tc.said)
			}
			if got := f.renderOptions().Listeners.Mode; got != tc.want {
				t.Errorf("render options in %s, want %s", got, tc.want)
			}
		})
	}
}
