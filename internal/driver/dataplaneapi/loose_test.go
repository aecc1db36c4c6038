package dataplaneapi

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// A node that joined since the Services' sections were last written has
// its servers in slots that follow no node. Those slots carry no check
// (issue 35: a check on a free slot costs HAProxy a file descriptor), as
// the HAProxy driver renders them: a server there follows its node's
// Kubernetes state through runtime requests, with no reload, and the next
// reload due for another reason binds it to its node's slot.
func TestContractLooseSlotFollowsItsNode(t *testing.T) {
	for _, path := range []struct {
		name string
		raw  int
	}{{"transactions", -1}, {"raw", 1}} {
		t.Run(path.name, func(t *testing.T) {
			run(t, func(t *testing.T, a *api) { looseSlotFollowsItsNode(t, a, path.raw) })
		})
	}
}

// looseWorld is a trackWorld on nodes whose HTTP node check answers (a
// health stand-in on each), so that the real HAProxy keeps them up.
func looseWorld(t *testing.T, a *api, nodes ...string) *trackWorld {
	t.Helper()
	t.Cleanup(func() { a.deleteSection(t, dataplane.BackendPath(model.NodesBackend)) }) // last: after its followers
	checkPort := freeTCPPort(t)
	for _, n := range nodes {
		h, err := lab.NewHealthServer(fmt.Sprintf("%s:%d", n, checkPort))
		if err != nil {
			t.Skipf("health stand-in: %v", err)
		}
		t.Cleanup(h.Close)
	}
	w := newTrackWorld(t, a, uint16(freeTCPPort(t)), nodes[:2]...)
	w.check = model.Check{Enabled: true, Inter: 200 * time.Millisecond, Rise: 2, Fall: 2, Port: uint16(checkPort), HTTP: model.HTTPCheck{Path: "/healthz"}}
	return w
}

func looseSlotFollowsItsNode(t *testing.T, a *api, rawMin int) {
	ctx := context.Background()
	const joined = "127.81.13.3"
	w := looseWorld(t, a, "127.81.13.1", "127.81.13.2", joined)
	d := a.driver(Options{RawMinWrites: rawMin})
	apply(t, d, w.cfg())
	noServerChecks(t, a, w, "written")
	r0 := a.reloads(t)
	w.nodes = append(w.nodes, model.Server{Addr: netip.MustParseAddr(joined)})
	w.setServers()
	if res, err := d.Apply(ctx, w.cfg()); err != nil || res.Reloaded {
		t.Fatalf("a node joins: reloaded %v err %v, want runtime requests only", res.Reloaded, err)
	}
	if err := d.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	noServerChecks(t, a, w, "a node joined")

	// Its servers, in slots following no node, follow its Kubernetes
	// state at runtime.
	serves := func(step string, want bool) {
		t.Helper()
		for i, s := range w.svcs {
			ap := netip.AddrPortFrom(netip.MustParseAddr(joined), 30080+uint16(i)).String()
			if got := a.serving(t, s.Name)[ap]; got != want {
				t.Errorf("%s: %s serving %s: %v, want %v", step, s.Name, ap, got, want)
			}
		}
	}
	serves("joined", true)
	w.node(joined, true)
	if res, err := d.Apply(ctx, w.cfg()); err != nil || res.Reloaded {
		t.Fatalf("the node NotReady: reloaded %v err %v, want runtime requests only", res.Reloaded, err)
	}
	serves("NotReady", false)
	w.node(joined, false)
	if res, err := d.Apply(ctx, w.cfg()); err != nil || res.Reloaded {
		t.Fatalf("the node Ready again: reloaded %v err %v, want runtime requests only", res.Reloaded, err)
	}
	serves("Ready again", true)
	if r := a.reloads(t); r != r0 {
		t.Errorf("%d reloads while the node joined, left and came back, want 0", r-r0)
	}

	// A reload due for another reason binds them to the node's slot.
	reloadAnyway(t, d, w)
	for _, s := range w.svcs {
		if got := followers(t, a, s.Name); got[joined] != joined {
			t.Errorf("%s after a reload: the joined node's server follows %q, want its node (%v)", s.Name, got[joined], got)
		}
	}
	noServerChecks(t, a, w, "after a reload")
	serves("bound", true)
}

// reloadAnyway makes a change that needs a reload (the first Service's
// server timeout) and applies it.
func reloadAnyway(t *testing.T, d *Driver, w *trackWorld) {
	t.Helper()
	b := *w.svcs[0]
	b.TimeoutServer += 7 * time.Second
	w.svcs[0] = &b
	if res, err := d.Apply(context.Background(), w.cfg()); err != nil || !res.Reloaded {
		t.Fatalf("a structural change: reloaded %v err %v, want a reload", res.Reloaded, err)
	}
}

// noServerChecks checks that the Services' backends of w, which follow
// their nodes, run no check of their own: no server with one, no HTTP
// check on the backend (the node check runs in model.NodesBackend).
func noServerChecks(t *testing.T, a *api, w *trackWorld, step string) {
	t.Helper()
	ctx := context.Background()
	for _, s := range w.svcs {
		var base Object
		if _, err := a.c.Do(ctx, "GET", dataplane.BackendPath(s.Name), nil, nil, &base); err != nil {
			t.Fatal(err)
		}
		if base["adv_check"] != nil {
			t.Errorf("%s: %s: adv_check %v, want none: its servers run no check", step, s.Name, base["adv_check"])
		}
		srvs, _, err := a.c.List(ctx, dataplane.ServersPath(s.Name), "")
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range srvs {
			if o["check"] != nil || o["health_check_port"] != nil {
				t.Errorf("%s: %s/%v: check %v port %v track %v, want no check on any slot (a free one costs HAProxy a file descriptor)",
					step, s.Name, o["name"], o["check"], o["health_check_port"], o["track"])
			}
		}
	}
}

// A HAProxy running what a release before issue 35 wrote (the unbound
// slots of following backends checked) is left so by a new controller
// until a reload is due for another reason: an upgrade costs no reload
// of its own; that reload drops the checks of every such backend.
func TestContractLooseSlotOlderChecked(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		ctx := context.Background()
		w := looseWorld(t, a, "127.81.13.17", "127.81.13.18", "127.81.13.19")
		apply(t, a.driver(Options{}), w.cfg())
		olderChecked(t, a, w)
		v, r0 := a.version(t), a.reloads(t)
		d := a.driver(Options{})
		res, err := d.Apply(ctx, w.cfg())
		if err != nil || res.Reloaded || res.Ops != 0 {
			t.Fatalf("a new controller on the older text: ops %d reloaded %v err %v, want nothing to do", res.Ops, res.Reloaded, err)
		}
		if err := d.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if a.version(t) != v || a.reloads(t) != r0 {
			t.Errorf("the older text was rewritten: version %d→%d, reloads %d→%d", v, a.version(t), r0, a.reloads(t))
		}
		reloadAnyway(t, d, w)
		noServerChecks(t, a, w, "the first reload after the upgrade")
	})
}

// olderChecked rewrites the Services' backends of w as releases from
// b05c188 until issue 35 wrote them: every unbound slot with the node
// check, and the backend with its HTTP request. One transaction.
func olderChecked(t *testing.T, a *api, w *trackWorld) {
	t.Helper()
	ctx := context.Background()
	tx, err := a.c.OpenTx(ctx, a.version(t))
	if err != nil {
		t.Fatal(err)
	}
	in := dataplane.Write{TxID: tx.ID}
	c := w.check
	for _, s := range w.svcs {
		base, _, err := a.c.Get(ctx, dataplane.BackendPath(s.Name), tx.ID)
		if err != nil {
			t.Fatal(err)
		}
		base["adv_check"] = "httpchk"
		base["httpchk_params"] = map[string]any{"method": "GET", "uri": c.HTTP.Path}
		if _, err := a.c.Replace(ctx, dataplane.BackendPath(s.Name), base, in); err != nil {
			t.Fatal(err)
		}
		expect := []any{map[string]any{"type": "expect", "match": "status", "pattern": "200"}}
		if _, err := a.c.ReplaceList(ctx, dataplane.HTTPChecksPath(s.Name), expect, in); err != nil {
			t.Fatal(err)
		}
		srvs, _, err := a.c.List(ctx, dataplane.ServersPath(s.Name), tx.ID)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, o := range srvs {
			if _, bound := o["track"]; bound {
				continue
			}
			checkFields(o, c, true)
			if _, err := a.c.Replace(ctx, dataplane.ServerPath(s.Name, fmt.Sprint(o["name"])), o, in); err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n == 0 {
			t.Fatalf("%s has no unbound slot: the case does not happen", s.Name)
		}
	}
	_, resp, err := a.c.CommitTx(ctx, tx.ID)
	if err != nil {
		t.Fatal(err)
	}
	a.waitReload(t, resp.ReloadID)
}
