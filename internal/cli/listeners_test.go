package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver/tproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// render shows both listener modes: --listeners=tproxy writes the fixed
// listener, the maps and the TPROXY table; ports (the default) the
// per-port frontends and no table, removing one an earlier render left.
func TestRenderListeners(t *testing.T) {
	dir := t.TempDir()
	args := func(extra ...string) []string {
		return append([]string{"-f", "testdata/pools.yaml", "--stats-socket", "/run/hks/admin.sock", "--state-file", "/var/lib/hks/state", "-o", dir}, extra...)
	}
	var stdout, stderr bytes.Buffer
	if err := renderCmd(args("--listeners", "tproxy"), env(nil), nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	read := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		// The structure hash covers the (temporary) paths: not compared.
		b = regexp.MustCompile(`description hks:[0-9a-f]+`).ReplaceAll(b, []byte("description hks:HASH"))
		return bytes.ReplaceAll(b, []byte(dir), []byte("DIR"))
	}
	golden.Assert(t, "listeners-tproxy.cfg", read("haproxy.cfg"))
	golden.Assert(t, "listeners.map", read("acl/listeners.map"))
	golden.Assert(t, "listeners-tproxy.nft", read("tproxy.nft"))
	netlab.NFTAccepts(t, read("tproxy.nft"))
	if !strings.Contains(stderr.String(), "tproxy.nft") {
		t.Errorf("stderr does not name tproxy.nft:\n%s", stderr.String())
	}

	// The environment chooses it too, and the default is ports.
	stderr.Reset()
	if err := renderCmd(args(), env(map[string]string{"HAPROXY_K8S_SYNC_LISTENERS": "ports"}), nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, "listeners-ports.cfg", read("haproxy.cfg"))
	if _, err := os.Stat(filepath.Join(dir, "tproxy.nft")); !os.IsNotExist(err) {
		t.Errorf("ports mode left tproxy.nft behind (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "acl", "listeners.map")); !os.IsNotExist(err) {
		t.Errorf("ports mode left listeners.map behind (%v)", err)
	}
}

func TestListenerFlagsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listeners", "nat"}, "want ports, tproxy or auto"},
		{[]string{"--listeners", "tproxy", "--listener-port", "0"}, "want a port of 1-65535"},
		{[]string{"--listener-port", "70000"}, "want a port of 1-65535"},
	} {
		var stdout, stderr bytes.Buffer
		err := renderCmd(append([]string{"-f", "testdata/pools.yaml"}, tc.args...), env(nil), nil, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// init in tproxy mode writes the fixed listener and its empty maps, so
// HAProxy starts (and refuses every connection) before run's first pass;
// the fixed HTTP listener and its maps too, as run has it by default,
// unless --http-listener=false (ports mode has neither); and the fixed
// HTTPS listener run's first pass has (its certificate directory beside
// the config), with its map, crt-list and default certificate, so that
// pass is no reload.
func TestInitListeners(t *testing.T) {
	for _, tc := range []struct {
		name             string
		args             []string
		tcp, http, https bool
	}{
		{"tproxy", []string{"--listeners", "tproxy"}, true, true, true},
		{"tproxy without the HTTP listener", []string{"--listeners", "tproxy", "--http-listener=false"}, true, false, false},
		{"ports", []string{"--listeners", "ports", "--http-listener"}, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "etc", "haproxy.cfg")
			args := append([]string{"--haproxy-config", cfg, "--stats-socket", filepath.Join(dir, "run", "admin.sock"), "--state-file", filepath.Join(dir, "lib", "state")}, tc.args...)
			if err := initCmd(args, env(nil), &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Contains(b, []byte("frontend _listeners")); got != tc.tcp {
				t.Errorf("init %v: the fixed listener written %v, want %v:\n%s", tc.args, got, tc.tcp, b)
			}
			if got := bytes.Contains(b, []byte("frontend _http_listeners")); got != tc.http {
				t.Errorf("init %v: the fixed HTTP listener written %v, want %v:\n%s", tc.args, got, tc.http, b)
			}
			_, err = os.Stat(filepath.Join(dir, "etc", "acl", "http-listeners.map"))
			if got := err == nil; got != tc.http {
				t.Errorf("init %v: http-listeners.map written %v, want %v (%v)", tc.args, got, tc.http, err)
			}
			if got := bytes.Contains(b, []byte("frontend _https_listeners")); got != tc.https {
				t.Errorf("init %v: the fixed HTTPS listener written %v, want %v:\n%s", tc.args, got, tc.https, b)
			}
			for _, p := range []string{"etc/acl/https-listeners.map", "etc/acl/clientauth.map", "etc/certs/_https_listeners.crtlist"} {
				_, err = os.Stat(filepath.Join(dir, p))
				if got := err == nil; got != tc.https {
					t.Errorf("init %v: %s written %v, want %v (%v)", tc.args, p, got, tc.https, err)
				}
			}
			golden.HAProxyAccepts(t, b)
		})
	}
}

// --https-listener-port moves the fixed HTTPS listener's binds (15443
// unless given).
func TestInitHTTPSListenerPort(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "\tbind :15443 transparent ssl crt-list "},
		{[]string{"--https-listener-port", "16443"}, "\tbind :16443 transparent ssl crt-list "},
	} {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "haproxy.cfg")
		args := append([]string{"--listeners", "tproxy", "--haproxy-config", cfg, "--stats-socket", filepath.Join(dir, "admin.sock"), "--state-file", filepath.Join(dir, "state")}, tc.args...)
		if err := initCmd(args, env(nil), &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(tc.want)) {
			t.Errorf("init %v: no line %q:\n%s", tc.args, tc.want, b)
		}
	}
}

// tproxy mode where nothing would run its kernel side is a usage error.
func TestListenersOtherModes(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--mode=apiserver", "--listeners=tproxy", "--bootstrap-servers", "192.0.2.1:6443", "--listen", "127.0.0.1:16443",
			"--haproxy-config", filepath.Join(dir, "haproxy.cfg"), "--metrics-address", ""}, "--mode=apiserver keeps its own frontend"},
	} {
		code, _, errb := mainOf(tc.args...)
		if code != 2 || !strings.Contains(errb, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want exit 2 and %q", tc.args, code, errb, tc.want)
		}
	}
}

// cleanup --listeners deletes the TPROXY table and its policy routing.
func TestCleanupListeners(t *testing.T) {
	lab := netlab.New(t, 0)
	d, err := tproxy.New(tproxy.Options{NetNS: netlab.Path(lab.LB)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Apply(t.Context(), model.Config{}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if _, err := lab.ListTable(lab.LB, tproxy.Table); err != nil {
		t.Fatalf("no table to clean up: %v", err)
	}
	if code, _, errb := mainOf("cleanup", "--listeners", "--listener-netns", netlab.Path(lab.LB)); code != 0 {
		t.Fatalf("cleanup --listeners: exit %d: %s", code, errb)
	}
	if out, err := lab.ListTable(lab.LB, tproxy.Table); err == nil {
		t.Errorf("the table is still there:\n%s", out)
	}
	if out, _ := lab.Exec(lab.LB, "ip", "rule", "show"); strings.Contains(out, "fwmark") {
		t.Errorf("the policy routing rule is still there:\n%s", out)
	}
}
