package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/objects"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestRenderCommand(t *testing.T) {
	var out, errb bytes.Buffer
	err := renderCmd([]string{"-f", "testdata/cluster.yaml", "--stats-socket", "/run/hks/admin.sock", "--state-file", "/var/lib/hks/state", "--output", "haproxy"},
		env(nil), nil, &out, &errb)
	// testdata/cluster.yaml holds an object that does not decode
	// (default/broken): the rest is printed, and render fails.
	if !errors.Is(err, objects.ErrDecode) {
		t.Fatalf("render: %v, want an objects.ErrDecode", err)
	}
	golden.Assert(t, "cluster.cfg", out.Bytes())
	stderr := errb.String()
	for _, want := range []string{
		"Service default/broken",                        // undecodable object named
		"annotation haproxy-k8s-sync.io/timeout-client", // invalid annotation named
		"UnsupportedBalance",                            // a UDP port with balance leastconn
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(out.String(), "listen x") || strings.Contains(out.String(), "evil") {
		t.Errorf("invalid Service reached the config")
	}
	golden.HAProxyAccepts(t, out.Bytes())
}

func TestRenderStdinAndSingleServiceLegacyEnv(t *testing.T) {
	in, err := os.Open("testdata/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out, errb bytes.Buffer
	legacy := env(map[string]string{
		"INGRESS_NAMESPACE": "ingress-nginx", "INGRESS_SERVICE_NAME": "ingress",
		"HAPROXY_BACKEND_NAME": "be_ingress_https", "HAPROXY_BACKEND_PORT": "32443", "HAPROXY_SEND_PROXY_V2": "true",
	})
	if err := renderCmd([]string{"-f", "-"}, legacy, in, &out, &errb); !errors.Is(err, objects.ErrDecode) {
		t.Fatalf("render: %v, want an objects.ErrDecode (default/broken)", err)
	}
	cfg := out.String()
	for _, want := range []string{"backend be_ingress_https\n", "server s1 192.0.2.10:32443 track _nodes/s1\n", "send-proxy-v2", "bind :8443\n"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, "be_default_web") {
		t.Errorf("single-Service mode rendered other Services")
	}
}

func TestPrecedenceFlagOverEnv(t *testing.T) {
	fs := newFlagSet("t")
	var s shape
	resync := fs.Duration("resync-period", time.Minute, "")
	e := env(map[string]string{
		"HAPROXY_K8S_SYNC_BIND_ADDRESS":    "127.0.0.1",
		"HAPROXY_K8S_SYNC_TARGETS":         "pods",
		"HAPROXY_K8S_SYNC_DEFAULT_BALANCE": "source",
		"HAPROXY_K8S_SYNC_DEFAULT_RISE":    "5",
		"RESYNC_PERIOD":                    "10s",
	})
	s.register(fs, e)
	if err := parse(fs, []string{"--targets", "nodes", "--default-rise", "7"}, e, &s); err != nil {
		t.Fatal(err)
	}
	o, err := s.desiredOptions()
	if err != nil {
		t.Fatal(err)
	}
	if o.Targets != "nodes" || len(o.Binds) != 1 || o.Binds[0].String() != "127.0.0.1" {
		t.Errorf("options %+v", o)
	}
	if s.defaults.Balance != "source" || s.defaults.Rise != 7 || *resync != 10*time.Second {
		t.Errorf("defaults %+v resync %v", s.defaults, *resync)
	}
}

func TestBadFlagsAreClearErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--targets", "everything"},
		{"--service", "no-slash"},
		{"--backend-name", "be x"},
		{"--bind-address", "not-an-ip"},
		{"--default-balance", "roundrobin\nlisten x"},
	} {
		fs := newFlagSet("t")
		var s shape
		s.register(fs, env(nil))
		err := parse(fs, args, env(nil), &s)
		if err == nil {
			_, err = s.desiredOptions()
		}
		if err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

func TestInitWritesValidConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "etc", "haproxy.cfg")
	args := []string{"--haproxy-config", cfg, "--stats-socket", filepath.Join(dir, "run", "admin.sock"), "--state-file", filepath.Join(dir, "lib", "state")}
	if err := initCmd(args, env(nil), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if err := initCmd(args, env(nil), &bytes.Buffer{}); err == nil {
		t.Errorf("init overwrote an existing config without --force")
	}
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	golden.HAProxyAccepts(t, b)
}

// A document that cannot be parsed at all makes render exit non-zero after
// printing what did render; so does, since issue 28's leftovers, an object
// that parses but does not decode (run never sees one).
func TestRenderExitsNonZeroOnUnparsableInput(t *testing.T) {
	const svc = "apiVersion: v1\nkind: Service\nmetadata: {name: ok, namespace: default}\n" +
		"spec: {type: LoadBalancer, loadBalancerClass: haproxy-k8s-sync.io/lb, ports: [{name: http, port: 81, nodePort: 30081, protocol: TCP}]}\n"
	const invalidSvc = "apiVersion: v1\nkind: Service\nmetadata: {name: bad, namespace: default}\nspec: {ports: \"not a list\"}\n"
	const unparsed = "could not be parsed"
	tests := []struct {
		name, input string
		code        int
		why         string // in stderr, when the code is not 0
	}{
		{"valid", svc, 0, ""},
		{"an object that parses but is invalid", svc + "---\n" + invalidSvc, 1, "1 object(s) could not be decoded"},
		{"invalid YAML", svc + "---\nkind: [unclosed\n", 1, unparsed},
		{"binary garbage", svc + "---\n\x00\x01\x02\xff\xfe garbage\x00\n", 1, unparsed},
		{"JSON cut short", `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"`, 1, unparsed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "in.yaml")
			if err := os.WriteFile(path, []byte(tc.input), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			code := Main([]string{"haproxy-k8s-sync", "render", "-f", path}, nil, &out, &errb)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, errb.String())
			}
			if strings.HasPrefix(tc.input, svc) && !strings.Contains(out.String(), "be_default_ok_81") {
				t.Errorf("what parsed was not rendered:\n%s", out.String())
			}
			if tc.code != 0 && !strings.Contains(errb.String(), tc.why) {
				t.Errorf("stderr does not say why:\n%s", errb.String())
			}
			if tc.code == 0 && strings.Contains(errb.String(), "error:") {
				t.Errorf("stderr reports an error:\n%s", errb.String())
			}
		})
	}
}
