package runtimeapi

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

// TestBackendCreatedAtRuntime (HAProxy 3.4+): with no pool of spares, a
// route moved to a Service no route used before is served with no reload,
// by a backend of the Service's own name that the driver created at
// runtime (add backend from its class's defaults, publish); the backend
// it left is unpublished and deleted; the config file on disk names the
// new backend and carries the hash that runs, so a restarted controller
// reloads nothing and a reload loads it from the file. A backend with
// ClientIP affinity, which no defaults section can describe, still
// reloads. A client of another listener sees no failed connection.
// On older versions (no add backend) it is skipped; without the driver's
// part, the new backend is a reload and the test fails.
func TestBackendCreatedAtRuntime(t *testing.T) {
	lb := startLabWith(t, runtimeBackends)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	showInfo := skipUnlessDynamic(ctx, t, lb)
	w := newPoolWorld(t)
	nodeOf := map[string]int{"be_a": 0, "be_b": 1, "be_c": 2}
	if _, err := lb.d.Apply(ctx, w.config([]string{"be_a"}, nodeOf)); err != nil {
		t.Fatal(err)
	}
	if got := w.answers(4); got["node-0"] != 4 {
		t.Fatalf("start: L1 answered %v, want node-0 only", got)
	}
	stop := w.keepProbing(t)
	noReload := lb.noReload(ctx, t)
	backends := func() []string { // those with servers, as HAProxy lists them
		t.Helper()
		rt := haproxy.NewRuntime(lb.p.StatsSocket)
		defer rt.Close()
		states, err := rt.ShowServersState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range states {
			if !slices.Contains(out, s.Backend) {
				out = append(out, s.Backend)
			}
		}
		return out
	}

	cfg := w.config([]string{"be_b"}, nodeOf)
	noReload("a new backend", cfg)
	if got := w.answers(8); got["node-1"] != 8 {
		t.Fatalf("be_b: L1 answered %v, want node-1 only", got)
	}
	if got := lb.d.HAProxyBackend("be_b"); got != "be_b" {
		t.Errorf("be_b is served by %s, want its own backend", got)
	}
	// be_a goes once HAProxy lets it (no connection of the probes left),
	// tried again by every pass: passes of the same model until then.
	have := backends()
	for deadline := time.Now().Add(10 * time.Second); slices.Contains(have, "be_a") && time.Now().Before(deadline); have = backends() {
		noReload("be_a's deletion tried again", cfg)
	}
	if !slices.Contains(have, "be_b") || slices.Contains(have, "be_a") {
		t.Errorf("HAProxy's backends %v: want be_b created, be_a deleted", have)
	}

	// The file on disk runs what HAProxy runs: be_b from its class, the
	// hash the worker reports.
	lb.d.flush(ctx)
	file, err := os.ReadFile(lb.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(file), "\nbackend be_b from "+render.DynamicPrefix) {
		t.Errorf("the config file does not name be_b from its class:\n%s", file)
	}
	if info, err := showInfo(); err != nil || !strings.Contains(string(file), "description "+info["description"]+"\n") {
		t.Errorf("the config file's hash is not the worker's %q (%v)", info["description"], err)
	}

	// A restarted controller finds be_b where it is: no reload.
	_ = lb.d.Close()
	lb.d = NewHAProxy(lb.options(runtimeBackends))
	noReload("restart", cfg)
	if drift, err := lb.d.Verify(ctx); err != nil || drift {
		t.Errorf("Verify after the restart: drift %v, %v", drift, err)
	}
	if got := w.answers(4); got["node-1"] != 4 {
		t.Fatalf("after the restart: L1 answered %v, want node-1 only", got)
	}

	// be_c of another class (a new defaults section: a reload), then be_b
	// moved to that class: the hash is the same, but HAProxy cannot move
	// a backend to another defaults section: a reload too.
	withTimeout := func(cfg model.Config, names ...string) model.Config {
		cfg.Backends = slices.Clone(cfg.Backends)
		for i, b := range cfg.Backends {
			if slices.Contains(names, b.Name) {
				c := *b
				c.TimeoutServer = 5 * time.Second
				cfg.Backends[i] = &c
			}
		}
		return cfg
	}
	two := w.config([]string{"be_b", "be_c"}, nodeOf)
	if res, err := lb.d.Apply(ctx, withTimeout(two, "be_c")); err != nil || !res.Reloaded {
		t.Fatalf("a new class: %+v, %v; want a reload", res, err)
	}
	res, err := lb.d.Apply(ctx, withTimeout(two, "be_b", "be_c"))
	if err != nil || !res.Reloaded || !slices.ContainsFunc(res.Reasons, func(r string) bool { return strings.Contains(r, "be_b changed class") }) {
		t.Fatalf("be_b to be_c's class: %+v, %v; want a reload for be_b's class", res, err)
	}
	if got := render.DynamicBackends(withTimeout(two, "be_b", "be_c"), render.Options{DynamicBackends: true}); got["be_b"] != got["be_c"] {
		t.Fatalf("classes %v", got)
	}

	// A backend with affinity cannot come from a defaults section: a
	// reload, which loads be_b from the file as an ordinary backend.
	w.affinity = time.Minute
	res, err = lb.d.Apply(ctx, w.config([]string{"be_b", "be_c"}, nodeOf))
	if err != nil || !res.Reloaded {
		t.Fatalf("affinity: %+v, %v; want a reload", res, err)
	}
	if got := w.answers(20); got["node-1"] == 0 || got["node-2"] == 0 || got[""] > 0 {
		t.Fatalf("after the reload: L1 answered %v, want be_b's node-1 and be_c's node-2", got)
	}
	if ok, failed := stop(); failed > 0 || ok == 0 {
		t.Errorf("L2's client: %d failed connections of %d", failed, ok+failed)
	} else {
		t.Logf("L2's client: %d connections, none failed", ok)
	}
}

// runtimeBackends lets the lab's driver create backends at runtime where
// HAProxy can (the lab's default is not to).
func runtimeBackends(o *Options) { o.staticBackends = false }

// skipUnlessDynamic skips a test whose HAProxy creates no backends at
// runtime, and returns show info asked on a connection of its own per
// call (a reload's new worker is another process).
func skipUnlessDynamic(ctx context.Context, t *testing.T, lb *testLab) func() (map[string]string, error) {
	t.Helper()
	showInfo := func() (map[string]string, error) {
		rt := haproxy.NewRuntime(lb.p.StatsSocket)
		defer rt.Close()
		return rt.ShowInfo(ctx)
	}
	info, err := showInfo()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := haproxy.ParseVersion(info["Version"]); err != nil || !v.DynamicBackends() {
		t.Skipf("HAProxy %q creates no backends at runtime (3.4+): set HAPROXY_BIN", info["Version"])
	}
	return showInfo
}

// TestBackendCreatedAtRuntimeBesidePool (HAProxy 3.4+): with a pool of
// spares, a backend its class's defaults describe takes no spare (created
// at runtime, no reload), while one with ClientIP affinity, which no
// defaults section can hold, takes a spare as on older versions (after
// the reload that makes its class's spares, the next one with none).
func TestBackendCreatedAtRuntimeBesidePool(t *testing.T) {
	lb := startLabWith(t, func(o *Options) {
		runtimeBackends(o)
		o.Pool = spares.Policy{Spares: 2, Other: 1, LowWater: 1}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	skipUnlessDynamic(ctx, t, lb)
	w := newPoolWorld(t)
	nodeOf := map[string]int{"be_a": 0, "be_b": 1, "be_c": 2, "be_d": 1}
	if _, err := lb.d.Apply(ctx, w.config([]string{"be_a"}, nodeOf)); err != nil {
		t.Fatal(err)
	}
	noReload := lb.noReload(ctx, t)
	noReload("a new backend", w.config([]string{"be_b"}, nodeOf))
	if got := w.answers(4); got["node-1"] != 4 {
		t.Fatalf("be_b: L1 answered %v, want node-1 only", got)
	}
	for _, b := range []string{"be_b", "be_keep"} {
		if got := lb.d.HAProxyBackend(b); got != b {
			t.Errorf("%s is served by %s, want its own backend, no spare", b, got)
		}
	}

	w.affinity = time.Minute
	if res, err := lb.d.Apply(ctx, w.config([]string{"be_c"}, nodeOf)); err != nil || !res.Reloaded {
		t.Fatalf("the first backend with affinity: %+v, %v; want the reload that makes its class's spares", res, err)
	}
	if sp := lb.d.HAProxyBackend("be_c"); sp == "be_c" {
		t.Errorf("be_c (affinity) took no spare")
	}
	noReload = lb.noReload(ctx, t)
	noReload("a second backend with affinity", w.config([]string{"be_d"}, nodeOf))
	if sp := lb.d.HAProxyBackend("be_d"); sp == "be_d" {
		t.Errorf("be_d (affinity) took no spare")
	}
	if got := w.answers(4); got["node-1"] != 4 {
		t.Fatalf("be_d: L1 answered %v, want node-1 only", got)
	}
}
