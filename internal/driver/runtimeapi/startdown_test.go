package runtimeapi

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// TestReloadedServerStartsDown: the servers a reload brings into a backend
// checked by itself start down and serve only once their check passes (a
// server that refuses connections is never UP), while the servers the
// reload keeps keep their state (UP at once after it), and a backend
// whose every server the reload replaces keeps serving (its new servers
// start UP). Before, HAProxy
// started every server of the new configuration UP, its health at rise:
// a new Service's servers took connections before any check (the first
// reload's live server read UP at once, where now it needs rise checks).
func TestReloadedServerStartsDown(t *testing.T) {
	l := startLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := lab.NewNodeServer("live", "127.0.0.1")
	t.Cleanup(srv.Close)
	var live []model.Server
	for range 4 {
		p := haproxytest.FreePort(t)
		if err := srv.Listen(p); err != nil {
			t.Skipf("server stand-in: %v", err)
		}
		live = append(live, model.Server{Addr: netip.MustParseAddr("127.0.0.1"), Port: uint16(p)})
	}
	dead := model.Server{Addr: netip.MustParseAddr("127.0.0.1"), Port: uint16(haproxytest.FreePort(t))} // nothing listens
	// Rise 20 at 500 ms: a server that starts down reads UP only ~10 s
	// after the reload, long after the driver's Apply returns even on a
	// loaded machine (at rise 5 x 400 ms, a run at load 35 saw it UP when
	// Apply returned); one that starts UP reads UP at once.
	chk := model.Check{Enabled: true, Inter: 500 * time.Millisecond, Rise: 20, Fall: 2}
	a := &model.Backend{Name: "be_a", Balance: "roundrobin", Check: chk, Servers: live[:1]}
	b := &model.Backend{Name: "be_b", Balance: "roundrobin", Check: chk, Servers: []model.Server{live[1], dead}}

	states := func() map[string]haproxy.ServerState {
		t.Helper()
		// A connection of its own each time: one kept open goes on
		// talking to the worker of before a reload.
		rt := haproxy.NewRuntime(l.p.StatsSocket)
		defer rt.Close()
		all, err := rt.ShowServersState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]haproxy.ServerState{}
		for _, s := range all {
			if !s.Maint() {
				out[fmt.Sprintf("%s/%s", s.Backend, s.Addr.String()+":"+fmt.Sprint(s.Port))] = s
			}
		}
		return out
	}
	key := func(be string, s model.Server) string { return be + "/" + netip.AddrPortFrom(s.Addr, s.Port).String() }
	apply := func(step string, cfg model.Config) {
		t.Helper()
		res, err := l.d.Apply(ctx, cfg)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if !res.Reloaded {
			t.Fatalf("%s: no reload", step)
		}
	}
	// waitUp polls until want is UP, failing whenever a server of never
	// reads UP.
	waitUp := func(step, want string, never ...string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			st := states()
			for _, n := range never {
				if s, ok := st[n]; !ok {
					t.Fatalf("%s: %s not in service: %v", step, n, st)
				} else if s.Up() {
					t.Fatalf("%s: %s, whose check fails, is UP", step, n)
				}
			}
			if st[want].Up() {
				return
			}
			if time.Now().After(deadline) {
				raw, _ := os.ReadFile(l.statePath)
				t.Fatalf("%s: %s not UP within 60 s: %v\nthe state file loaded by the reload:\n%s", step, want, st, raw)
			}
			time.Sleep(50 * time.Millisecond) // poll interval, bounded by the deadline
		}
	}

	apply("a new backend", model.Config{Backends: []*model.Backend{a}})
	if s := states()[key("be_a", live[0])]; s.Up() {
		t.Fatalf("a new backend: %s UP right after the reload, before its check (op state %d)", key("be_a", live[0]), s.OpState)
	}
	waitUp("a new backend", key("be_a", live[0]))

	apply("another backend", model.Config{Backends: []*model.Backend{a, b}})
	st := states()
	if !st[key("be_a", live[0])].Up() {
		t.Fatalf("another backend: be_a's server, kept by the reload, is not UP: %v", st)
	}
	for _, s := range b.Servers {
		if st[key("be_b", s)].Up() {
			t.Fatalf("another backend: %s UP right after the reload, before its check", key("be_b", s))
		}
	}
	waitUp("another backend", key("be_b", live[1]), key("be_b", dead))
	// The dead server stays down for a few checks more.
	deadline := time.Now().Add(4 * chk.Inter)
	for time.Now().Before(deadline) {
		if states()[key("be_b", dead)].Up() {
			t.Fatalf("%s, whose check fails, is UP", key("be_b", dead))
		}
		time.Sleep(50 * time.Millisecond) // poll interval, bounded by the deadline
	}

	// A backend that served and keeps none of its servers through a
	// reload (be_a's replaced, beside a new backend that makes the
	// reload) starts its new one UP: starting it down would leave be_a
	// serving nothing until a check passed. The new backend's starts
	// down as before.
	a2 := &model.Backend{Name: "be_a", Balance: "roundrobin", Check: chk, Servers: live[2:3]}
	c := &model.Backend{Name: "be_c", Balance: "roundrobin", Check: chk, Servers: live[3:4]}
	apply("every server of a serving backend replaced", model.Config{Backends: []*model.Backend{a2, b, c}})
	st = states()
	if !st[key("be_a", live[2])].Up() {
		t.Errorf("every server replaced: be_a's new server not UP right after the reload (op state %d): be_a served nothing", st[key("be_a", live[2])].OpState)
	}
	if st[key("be_c", live[3])].Up() {
		t.Errorf("every server replaced: the new backend be_c's server UP right after the reload, before its check")
	}
}
