package runtimeapi

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// poolWorld: two Gateway TCP listeners on loopback, L1 routing to
// backends that come and go, L2 to one that stays, and three node
// stand-ins answering with their names.
type poolWorld struct {
	nodes    []*lab.NodeServer
	port     uint16
	l1, l2   int
	affinity time.Duration // of L1's backends
}

func newPoolWorld(t testing.TB) *poolWorld {
	w := &poolWorld{port: uint16(haproxytest.FreePort(t)), l1: haproxytest.FreePort(t), l2: haproxytest.FreePort(t)}
	for i := range 3 {
		n := lab.NewNodeServer(fmt.Sprint("node-", i), fmt.Sprintf("127.81.0.%d", i+1))
		if err := n.Listen(int(w.port)); err != nil {
			t.Skipf("node stand-in: %v", err)
		}
		t.Cleanup(n.Close)
		w.nodes = append(w.nodes, n)
	}
	return w
}

// config: L1 routes to the backends named, evenly, each served by the node
// of the same index in nodeOf; L2 routes to be_keep (node 0).
func (w *poolWorld) config(l1 []string, nodeOf map[string]int) model.Config {
	lo := netip.MustParseAddr("127.0.0.1")
	backend := func(name string, node int) *model.Backend {
		return &model.Backend{Name: name, Service: "ns/" + name, Balance: "roundrobin",
			Servers: []model.Server{{Addr: netip.MustParseAddr(w.nodes[node].IP), Port: w.port}}}
	}
	cfg := model.Config{Backends: []*model.Backend{backend("be_keep", 0)}}
	var route model.Route
	for _, name := range l1 {
		b := backend(name, nodeOf[name])
		b.Affinity = w.affinity
		cfg.Backends = append(cfg.Backends, b)
		route.Backends = append(route.Backends, model.WeightedBackend{Name: name, Weight: 1})
	}
	slices.SortFunc(cfg.Backends, func(a, b *model.Backend) int {
		return map[bool]int{true: -1, false: 1}[a.Name < b.Name]
	})
	cfg.Frontends = []model.Frontend{
		{Name: "gw_l1", Service: "ns/gw", Binds: []model.Bind{{Addr: lo, Port: uint16(w.l1)}}, Routes: []model.Route{route}},
		{Name: "gw_l2", Service: "ns/gw", Binds: []model.Bind{{Addr: lo, Port: uint16(w.l2)}},
			Routes: []model.Route{{Backends: []model.WeightedBackend{{Name: "be_keep", Weight: 1}}}}},
	}
	return cfg
}

// answers probes L1 n times and counts the answers by node ("" for a
// connection closed without one).
func (w *poolWorld) answers(n int) map[string]int {
	out := map[string]int{}
	for range n {
		name, _ := lab.Probe(fmt.Sprintf("127.0.0.1:%d", w.l1), 2*time.Second)
		out[name]++
	}
	return out
}

// keepProbing probes L2 until stop, counting failures.
func (w *poolWorld) keepProbing(t *testing.T) (stop func() (ok, failed int)) {
	return w.keepProbingOn(t, w.l2, "node-0")
}

// keepProbingOn probes port until stop, counting the connections not
// answered by one of the nodes named.
func (w *poolWorld) keepProbingOn(t *testing.T, port int, nodes ...string) (stop func() (ok, failed int)) {
	var okN, failedN atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if name, err := lab.Probe(fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second); err == nil && slices.Contains(nodes, name) {
				okN.Add(1)
			} else {
				failedN.Add(1)
				t.Logf("port %d: %q, %v", port, name, err)
			}
		}
	}()
	var once sync.Once
	stop = func() (int, int) {
		once.Do(func() { close(done) })
		wg.Wait()
		return int(okN.Load()), int(failedN.Load())
	}
	t.Cleanup(func() { stop() }) // before HAProxy stops: cleanups run last-in first-out
	return stop
}

func startPoolLab(t *testing.T, settle time.Duration) *testLab {
	t.Helper()
	return startLabWith(t, poolOptions(settle))
}

func poolOptions(settle time.Duration) func(*Options) {
	return func(o *Options) {
		o.ReloadSettle, o.Pool = settle, spares.Policy{Spares: 2, Other: 1, LowWater: 1}
	}
}

// TestPoolServesNewBackendsWithoutReload: a route to a backend no route
// used before takes a spare with no reload; the spare a backend gave back
// is clean (no server of its old occupant) and serves the next one; when
// the spares run out, the backend beyond them waits (WaitingForSpare)
// while the others are served, and the growth reload serves it; a
// restarted controller finds every backend where it was, with no reload.
// A client of another listener sees no failed connection throughout.
func TestPoolServesNewBackendsWithoutReload(t *testing.T) {
	lb := startPoolLab(t, 300*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := newPoolWorld(t)
	nodeOf := map[string]int{"be_a": 0, "be_b": 1, "be_c": 1, "be_d": 1, "be_e": 1, "be_f": 2}

	if _, err := lb.d.Apply(ctx, w.config([]string{"be_a"}, nodeOf)); err != nil {
		t.Fatal(err)
	}
	if got := w.answers(4); got["node-0"] != 4 {
		t.Fatalf("start: L1 answered %v, want node-0 only", got)
	}
	stop := w.keepProbing(t)
	reloads := lb.reloads(ctx, t)
	noReload := lb.noReload(ctx, t)

	// be_b replaces be_a: be_b takes a free spare, be_a's is given back.
	spareA := lb.d.HAProxyBackend("be_a")
	noReload("a new backend", w.config([]string{"be_b"}, nodeOf))
	if got := w.answers(4); got["node-1"] != 4 {
		t.Fatalf("be_b: L1 answered %v, want node-1 only", got)
	}
	if sp := lb.d.HAProxyBackend("be_b"); sp == spareA || sp == "be_b" {
		t.Fatalf("be_b is in %q (be_a was in %s): want a free spare", sp, spareA)
	}
	states, err := haproxy.NewRuntime(lb.p.StatsSocket).ShowServersState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range states {
		if s.Backend == spareA && !s.Maint() {
			t.Errorf("the spare be_a gave back still serves %s/%s at %v:%d", s.Backend, s.Server, s.Addr, s.Port)
		}
	}

	// be_c takes be_a's old spare (the lowest free one): it serves be_c's
	// node only, nothing of be_a's.
	noReload("a backend in a spare given back", w.config([]string{"be_c"}, nodeOf))
	if sp := lb.d.HAProxyBackend("be_c"); sp != spareA {
		t.Errorf("be_c is in %s, want the spare given back, %s", sp, spareA)
	}
	if got := w.answers(8); got["node-1"] != 8 {
		t.Fatalf("be_c: L1 answered %v, want node-1 only (node-0 was be_a's)", got)
	}

	// Three more backends, two free spares: be_d and be_e are served at
	// once, be_f waits for the growth reload (held back by the settle
	// time), and is then served.
	cfg := w.config([]string{"be_c", "be_d", "be_e", "be_f"}, nodeOf)
	res, err := lb.d.Apply(ctx, cfg)
	if !errors.Is(err, driver.ErrDeferred) || res.Reloaded || res.RetryAfter <= 0 {
		t.Fatalf("beyond the pool: %+v, %v; want the growth deferred", res, err)
	}
	if len(res.Refused) != 1 || res.Refused[0].Service != "ns/be_f" || res.Refused[0].Reason != ReasonWaitingForSpare {
		t.Errorf("refused %+v, want ns/be_f waiting", res.Refused)
	}
	if n := lb.reloads(ctx, t); n != reloads {
		t.Fatalf("HAProxy reloaded before the growth was due")
	}
	for _, b := range []string{"be_d", "be_e"} {
		if sp := lb.d.HAProxyBackend(b); sp == b {
			t.Errorf("%s took no spare before the growth", b)
		}
	}
	if got := w.answers(40); got["node-1"] == 0 || got["node-2"] > 0 {
		t.Fatalf("before the growth: L1 answered %v, want be_c..be_e's node-1 and nothing of be_f's node-2", got)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		time.Sleep(res.RetryAfter) // the loop's retry: its timer, here by hand
		res, err = lb.d.Apply(ctx, cfg)
		if err == nil || !errors.Is(err, driver.ErrDeferred) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || !res.Reloaded {
		t.Fatalf("growth: %+v, %v; want one reload", res, err)
	}
	if n := lb.reloads(ctx, t); n != reloads+1 {
		t.Fatalf("growth: %d reloads, want 1", n-reloads)
	}
	if got := w.answers(40); got["node-2"] == 0 || got[""] > 0 {
		t.Fatalf("after the growth: L1 answered %v, want be_f's node-2 too and no refusal", got)
	}
	noReload = lb.noReload(ctx, t) // counted from the growth on
	// The grown pool was viewed through the memo (issue 29's peak): a
	// pass of the same model views every spare as the very backend the
	// growth applied, not a second copy of each.
	// Its maps (the memo's and the view's index) were left to the pass
	// that needs them, not built into the growth's.
	lb.d.mu.Lock()
	grownView := lb.d.desired.Backends
	if lb.d.poolView.hasIndex || !lb.d.poolView.indexLater || lb.d.poolView.memo.Built() {
		t.Errorf("the growth built the pool view's maps (index %d entries, memo's built %v)",
			len(lb.d.poolView.index), lb.d.poolView.memo.Built())
	}
	if !model.SameSlice(lb.d.poolView.pool, lb.d.pool.Spares) {
		t.Errorf("the pool view keeps a copy of the pool's %d spares, not the pool's own", len(lb.d.pool.Spares))
	}
	lb.d.mu.Unlock()
	noReload("the same model after the growth", cfg)
	lb.d.mu.Lock()
	for i, b := range lb.d.desired.Backends {
		if i < len(grownView) && b != grownView[i] && b.Name == grownView[i].Name {
			t.Errorf("after the growth %s is another copy, not the backend the growth applied", b.Name)
		}
	}
	lb.d.mu.Unlock()

	// A restarted controller: the same spares, the same assignment, no reload.
	before := map[string]string{}
	for _, b := range []string{"be_c", "be_d", "be_e", "be_f", "be_keep"} {
		before[b] = lb.d.HAProxyBackend(b)
	}
	_ = lb.d.Close()
	lb.d = NewHAProxy(lb.options(poolOptions(300 * time.Millisecond)))
	noReload("restart", cfg)
	for b, sp := range before {
		if got := lb.d.HAProxyBackend(b); got != sp {
			t.Errorf("after a restart %s is in %s, was in %s", b, got, sp)
		}
	}
	if ok, failed := stop(); failed > 0 || ok == 0 {
		t.Errorf("L2's client: %d failed connections of %d", failed, ok+failed)
	} else {
		t.Logf("L2's client: %d connections, none failed", ok)
	}
}

// TestPoolClearsStickTableOfSpareGivenBack: a spare of a class with
// ClientIP affinity keeps its stick table across occupants unless it is
// cleared; the driver clears it when the spare is given back.
func TestPoolClearsStickTableOfSpareGivenBack(t *testing.T) {
	lb := startPoolLab(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := newPoolWorld(t)
	w.affinity = time.Minute
	nodeOf := map[string]int{"be_a": 0, "be_b": 1}
	if _, err := lb.d.Apply(ctx, w.config([]string{"be_a"}, nodeOf)); err != nil {
		t.Fatal(err)
	}
	if got := w.answers(2); got["node-0"] != 2 {
		t.Fatalf("L1 answered %v", got)
	}
	spare := lb.d.HAProxyBackend("be_a")
	rt := haproxy.NewRuntime(lb.p.StatsSocket)
	defer rt.Close()
	table := func() string {
		t.Helper()
		out, err := rt.ExecChecked(ctx, []string{"show table " + spare})
		if err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	if got := table(); !strings.Contains(got, "used:1") {
		t.Fatalf("no entry for the client in %s's table: %q", spare, got)
	}
	res, err := lb.d.Apply(ctx, w.config([]string{"be_b"}, nodeOf))
	if err != nil || res.Reloaded {
		t.Fatalf("be_b: %+v, %v; want no reload", res, err)
	}
	if got := table(); !strings.Contains(got, "used:0") {
		t.Errorf("the stick table of the spare be_a gave back still holds entries: %q", got)
	}
}

// TestPoolServerChangesTakeTheFastPath: with a pool, a pass that changes
// only servers (Config.Changes) is applied by the servers-only path, as
// without one, and the traffic follows.
func TestPoolServerChangesTakeTheFastPath(t *testing.T) {
	lb := startPoolLab(t, 0)
	var fast atomic.Int64
	lb.d.opts.onServersOnly = func() { fast.Add(1) }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := newPoolWorld(t)
	nodeOf := map[string]int{"be_a": 0}
	cfg := w.config([]string{"be_a"}, nodeOf)
	if _, err := lb.d.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	// The first pass after the growth reload views the model again.
	if _, err := lb.d.Apply(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for step := range 6 {
		node := (step + 1) % 3
		next := model.Config{Frontends: cfg.Frontends, Backends: slices.Clone(cfg.Backends)}
		i := slices.IndexFunc(next.Backends, func(b *model.Backend) bool { return b.Name == "be_a" })
		next.Backends[i] = next.Backends[i].WithServers([]model.Server{{Addr: netip.MustParseAddr(w.nodes[node].IP), Port: w.port}})
		next.Changes = &model.Changes{Base: cfg.Backends, Backends: []int{i}}
		before := fast.Load()
		res, err := lb.d.Apply(ctx, next)
		if err != nil || res.Reloaded {
			t.Fatalf("step %d: %+v, %v", step, res, err)
		}
		if fast.Load() != before+1 {
			t.Fatalf("step %d: the servers-only path was not taken", step)
		}
		want := fmt.Sprintf("node-%d", node)
		if got := w.answers(3); got[want] != 3 {
			t.Fatalf("step %d: L1 answered %v, want %s", step, got, want)
		}
		cfg = next
	}
}

// TestPoolRouteMovesWithoutFailedConnections: a route moved to a backend
// no route used, again and again, under a client of its own: the new
// spare's servers are in service before the route map names it, and the
// old spare's leave service only after: no connection finds a spare with
// no server.
func TestPoolRouteMovesWithoutFailedConnections(t *testing.T) {
	lb := startPoolLab(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := newPoolWorld(t)
	names := []string{"be_a", "be_b", "be_c", "be_d"}
	nodeOf := map[string]int{"be_a": 0, "be_b": 1, "be_c": 2, "be_d": 0}
	if _, err := lb.d.Apply(ctx, w.config(names[:1], nodeOf)); err != nil {
		t.Fatal(err)
	}
	stop := w.keepProbingOn(t, w.l1, "node-0", "node-1", "node-2")
	reloads := lb.reloads(ctx, t)
	for i := range 24 {
		res, err := lb.d.Apply(ctx, w.config(names[(i+1)%len(names):(i+1)%len(names)+1], nodeOf))
		if err != nil || res.Reloaded {
			t.Fatalf("move %d: %+v, %v; want no reload", i, res, err)
		}
		time.Sleep(20 * time.Millisecond) // let the client run between moves; not synchronisation
	}
	if n := lb.reloads(ctx, t); n != reloads {
		t.Errorf("%d reloads, want 0", n-reloads)
	}
	if ok, failed := stop(); failed > 0 || ok == 0 {
		t.Errorf("L1's client: %d failed connections of %d across 24 moves", failed, ok+failed)
	} else {
		t.Logf("L1's client: %d connections across 24 moves, none failed", ok)
	}
}
