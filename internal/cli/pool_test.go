package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/objects"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// TestBackendPoolFlags: the pool's sizes, from flags or the environment,
// and their wrong values as usage errors (exit 2 and a hint).
func TestBackendPoolFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--backend-pool=-1"}, "--backend-pool: want 0 to 100000, got -1"},
		{[]string{"run", "--backend-pool=4", "--backend-pool-low-water=5"}, "--backend-pool-low-water: 5 is more than --backend-pool (4)"},
		{[]string{"run", "--backend-pool-other=100001"}, "--backend-pool-other: want 0 to 100000"},
	} {
		code, _, errb := mainOf(tc.args...)
		if code != 2 || !strings.Contains(errb, tc.want) || !strings.Contains(errb, "--help") {
			t.Errorf("%v: exit %d, stderr %q, want exit 2, %q and a hint", tc.args, code, errb, tc.want)
		}
	}
	// The environment, as every flag: HAPROXY_K8S_SYNC_BACKEND_POOL.
	var out, errb bytes.Buffer
	code := exitCode(execute(context.Background(), []string{"run"}, env(map[string]string{EnvPrefix + "BACKEND_POOL": "-3"}), nil, &out, &errb), &errb)
	if code != 2 || !strings.Contains(errb.String(), "--backend-pool: want 0 to 100000, got -3") {
		t.Errorf("HAPROXY_K8S_SYNC_BACKEND_POOL=-3: exit %d, stderr %q", code, errb.String())
	}
	for _, tc := range []struct {
		f    poolFlags
		want spares.Policy
	}{
		{poolFlags{other: 1, lowWater: 1}, spares.Policy{Other: 1, LowWater: 1}},
		{poolFlags{spares: 64, other: 2, lowWater: 16}, spares.Policy{Spares: 64, Other: 2, LowWater: 16}},
	} {
		if got, err := tc.f.policy(); err != nil || got != tc.want || got.On() != (tc.want.Spares > 0) {
			t.Errorf("%+v: %+v, %v; want %+v", tc.f, got, err, tc.want)
		}
	}
}

// render --backend-pool writes the pool a controller would start with:
// every Service's backend in a spare, the frontends naming it (golden),
// and HAProxy accepts it.
func TestRenderBackendPool(t *testing.T) {
	var out, errb bytes.Buffer
	err := renderCmd([]string{"-f", "testdata/cluster.yaml", "--stats-socket", "/run/hks/admin.sock", "--state-file", "/var/lib/hks/state",
		"--output", "haproxy", "--backend-pool=2"}, env(nil), nil, &out, &errb)
	// testdata/cluster.yaml holds an object that does not decode: the
	// rest is rendered, and render fails (TestRenderCommand).
	if !errors.Is(err, objects.ErrDecode) {
		t.Fatalf("render: %v, want an objects.ErrDecode", err)
	}
	golden.Assert(t, "cluster-pool.cfg", out.Bytes())
	if !strings.Contains(out.String(), "default_backend _pool_0") || !strings.Contains(out.String(), "\t# serves ") {
		t.Errorf("no frontend on a spare, or no spare saying whose it is:\n%s", out.String())
	}
	golden.HAProxyAccepts(t, out.Bytes())
	code, _, errs := mainOf("render", "-f", "testdata/cluster.yaml", "--backend-pool=-2")
	if code != 2 || !strings.Contains(errs, "--backend-pool: want 0 to 100000") {
		t.Errorf("render --backend-pool=-2: exit %d, %q", code, errs)
	}
}

// TestDefaultListenersAndPool: --listeners is auto unless given; the pool
// is DefaultListenerPool with the fixed listener (tproxy, as given or as
// auto chose it) and none with per-port frontends, unless --backend-pool
// is given, on the command line or in the environment (0 included).
func TestDefaultListenersAndPool(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		mode string // the listeners as resolved
		want int
	}{
		{"tproxy, not given", nil, nil, render.ListenersTProxy, DefaultListenerPool},
		{"ports, not given", nil, nil, render.ListenersPorts, 0},
		{"tproxy, given", []string{"--backend-pool=4"}, nil, render.ListenersTProxy, 4},
		{"tproxy, given none", []string{"--backend-pool=0"}, nil, render.ListenersTProxy, 0},
		{"ports, given", []string{"--backend-pool=4"}, nil, render.ListenersPorts, 4},
		{"tproxy, from the environment", nil, map[string]string{EnvPrefix + "BACKEND_POOL": "8"}, render.ListenersTProxy, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFlagSet("run")
			var p poolFlags
			var l listenerFlags
			p.register(fs)
			l.register(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := applyEnv(fs, env(tc.env)); err != nil {
				t.Fatal(err)
			}
			if l.mode != listenersAuto || l.given {
				t.Errorf("--listeners: %q (given %v), want auto by default", l.mode, l.given)
			}
			p.forListeners(tc.mode)
			if p.spares != tc.want {
				t.Errorf("--backend-pool in %s mode: %d, want %d", tc.mode, p.spares, tc.want)
			}
		})
	}
}
