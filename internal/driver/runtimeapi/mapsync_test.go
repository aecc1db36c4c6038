package runtimeapi

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// routeTable is n HTTP routes, each a host r<i>.example.com with an
// Exact path /p<i> (route 0's is path0), a prefix matching a header, and
// a split between two backends: route 0's weights w0 to gwh_a, every
// third route's all to gwh_a, the others' of 50 kinds.
func routeTable(n int, path0 string, w0 int32) *model.HTTP {
	h := &model.HTTP{Port: 80}
	for i := range n {
		path, w := "/p"+strconv.Itoa(i), int32(50+i%50)
		switch {
		case i == 0:
			path, w = path0, w0
		case i%3 == 0:
			w = 100
		}
		h.Hosts = append(h.Hosts, model.HTTPHost{Name: fmt.Sprintf("r%d.example.com", i), Rules: []model.HTTPRule{
			{PathType: model.PathExact, Path: path, Action: 2 * i},
			{PathType: model.PathPrefix, Path: "/", Headers: []model.HeaderMatch{{Name: "version", Value: "2"}}, Action: 2*i + 1},
			{PathType: model.PathPrefix, Path: "/", Action: 2*i + 1},
		}})
		h.Actions = append(h.Actions, model.HTTPAction{Backends: []model.WeightedBackend{{Name: "gwh_a", Weight: w}, {Name: "gwh_b", Weight: 100 - w}}},
			model.HTTPAction{Backends: []model.WeightedBackend{{Name: "gwh_b", Weight: 1}}})
	}
	return model.Shaped(h)
}

// httpConfig is one HTTP frontend on 127.0.0.1:port serving table h
// from backends gwh_a (server a) and gwh_b (server b).
func httpConfig(port uint16, h *model.HTTP, a, b netip.AddrPort) model.Config {
	be := func(name string, s netip.AddrPort) *model.Backend {
		return &model.Backend{Name: name, Balance: "roundrobin", HTTP: true, Servers: []model.Server{{Addr: s.Addr(), Port: s.Port()}}}
	}
	return model.Config{
		Frontends: []model.Frontend{{Name: "gw_apps_gw_80", Binds: []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: port}}, HTTP: h}},
		Backends:  []*model.Backend{be("gwh_a", a), be("gwh_b", b)},
	}
}

// showMap is what the running worker holds of the map at path (`show
// map`), by key.
func showMap(ctx context.Context, t *testing.T, d *HAProxy, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, e := range showEntries(ctx, t, d, path) {
		out[k] = e[1]
	}
	return out
}

// showEntries is showMap with each entry's reference (its address in
// HAProxy, which an entry keeps until it is deleted): key to {ref, value}.
func showEntries(ctx context.Context, t *testing.T, d *HAProxy, path string) map[string][2]string {
	t.Helper()
	ans, err := d.rt.ExecChecked(ctx, []string{"show map " + path})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]string{}
	for _, l := range strings.Split(ans[0], "\n") {
		// "0x... key value", the value the rest of the line (it may
		// hold spaces: headervalues_test.go).
		ref, rest, ok := strings.Cut(l, " ")
		k, v, ok2 := strings.Cut(rest, " ")
		if !ok || !ok2 || !strings.HasPrefix(ref, "0x") {
			continue
		}
		if _, dup := out[k]; dup {
			t.Errorf("%s holds %s twice", path, k)
		}
		out[k] = [2]string{ref, v}
	}
	return out
}

// fileMap is a map file's entries, by key.
func fileMap(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			out[k] = v
		}
	}
	return out
}

// TestRouteChangeByDifference: one route changed among hundreds is a few
// Runtime API commands (an entry added, set or deleted), never the whole
// map replaced (hundreds: what the driver sent before); after each step
// every HTTP map HAProxy holds (`show map`) is the file on disk, entry
// for entry, and the changed route and an unchanged one answer as the
// table says. A map whose running entries are unknown (a failed push,
// simulated by forgetting them) is replaced whole once, then changed by
// difference again. No reload throughout.
func TestRouteChangeByDifference(t *testing.T) {
	const n = 300
	l := startMapLab(t)
	d := l.d
	ctx := context.Background()
	a, b := httpBackend(t, "A"), httpBackend(t, "B")
	port := uint16(haproxytest.FreePort(t))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cfgOf := func(h *model.HTTP) model.Config { return httpConfig(port, h, a, b) }
	if _, err := d.Apply(ctx, cfgOf(routeTable(n, "/app", 100))); err != nil {
		t.Fatal(err)
	}
	reloads := l.reloads(ctx, t)
	// running is every entry HAProxy holds, "kind key" to {ref, value}.
	running := func() map[string][2]string {
		out := map[string][2]string{}
		if _, listed := d.held.reads(d.pid, ""); !listed {
			if err := d.listMaps(ctx); err != nil { // which maps the worker reads
				t.Fatal(err)
			}
		}
		for _, kind := range render.HTTPMapKinds {
			p := render.HTTPMapFile(d.opts.Render.ACLDir, "gw_apps_gw_80", kind)
			if read, known := d.held.reads(d.pid, p); known && !read {
				continue // no rule reads it (routeTable changes no header, has no HTTPS listener): HAProxy has no such map
			}
			for k, e := range showEntries(ctx, t, d, p) {
				out[kind+" "+k] = e
			}
		}
		return out
	}
	held := func(step string) {
		t.Helper()
		for _, kind := range render.HTTPMapKinds {
			p := render.HTTPMapFile(d.opts.Render.ACLDir, "gw_apps_gw_80", kind)
			if read, known := d.held.reads(d.pid, p); known && !read {
				continue // no rule reads it (no header changed): HAProxy has no such map
			}
			if got, want := showMap(ctx, t, d, p), fileMap(t, p); !maps.Equal(got, want) {
				t.Errorf("%s: HAProxy's %s map (%d entries) is not its file (%d entries)", step, kind, len(got), len(want))
			}
		}
	}
	type req struct{ host, path, body string }
	check := func(step string, reqs ...req) {
		t.Helper()
		for _, r := range reqs {
			if status, body := httpGet(t, addr, r.host, r.path); status != 200 || !strings.HasPrefix(body, r.body) {
				t.Errorf("%s: GET %s%s: %d %q, want 200 %q", step, r.host, r.path, status, body, r.body)
			}
		}
	}
	for _, step := range []struct {
		name    string
		path0   string
		w0      int32
		maxOps  int
		checked []req
	}{
		// r0's Exact path moves: the host's new id and its paths added,
		// its hosts entry set, the old paths deleted (render's ids are
		// named by content: httpids.go).
		{"path moved", "/moved", 100, 8, []req{{"r0.example.com", "/moved", "A"}, {"r0.example.com", "/app", "B"}, {"r7.example.com", "/app", ""}}},
		// r0's split to B alone: a new action, group and host id.
		{"weights", "/moved", 0, 8, []req{{"r0.example.com", "/moved", "B"}, {"r7.example.com", "/x", "B"}}},
		{"back", "/app", 100, 8, []req{{"r0.example.com", "/app", "A"}, {"r0.example.com", "/moved", "B"}}},
	} {
		before := running()
		res, err := d.Apply(ctx, cfgOf(routeTable(n, step.path0, step.w0)))
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if res.Ops == 0 || res.Ops > step.maxOps {
			t.Errorf("%s: %d Runtime API commands, want 1..%d (a whole map is %d and more)", step.name, res.Ops, step.maxOps, n)
		}
		// Only the changed entries were touched: every other entry is the
		// very one HAProxy held (same reference, same value).
		after, touched := running(), 0
		for k, e := range after {
			if before[k] != e {
				touched++
			}
		}
		for k := range before {
			if _, ok := after[k]; !ok {
				touched++
			}
		}
		if touched == 0 || touched > step.maxOps {
			t.Errorf("%s: %d of %d entries added, changed or deleted in HAProxy, want 1..%d", step.name, touched, len(after), step.maxOps)
		}
		held(step.name)
		check(step.name, step.checked...)
	}

	// Unknown running entries: read back (mapread.go), then the
	// difference alone.
	d.held.forget()
	res, err := d.Apply(ctx, cfgOf(routeTable(n, "/again", 100)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops == 0 || res.Ops > 8 {
		t.Errorf("unknown maps: %d commands, want the difference read back, 1..8 (a whole replace is more than %d)", res.Ops, n)
	}
	held("unknown")
	res, err = d.Apply(ctx, cfgOf(routeTable(n, "/app", 100)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops == 0 || res.Ops > 8 {
		t.Errorf("after the whole replace: %d commands, want 1..8", res.Ops)
	}
	held("known again")
	check("known again", req{"r0.example.com", "/app", "A"}, req{"r297.example.com", "/p297", "A"})
	if got := l.reloads(ctx, t); got != reloads {
		t.Errorf("%d reloads for route changes, want 0", got-reloads)
	}
}

// TestMapPushFailureReadsBack: an entry changed behind the driver's
// back makes its next command fail; the pass reports it, the files on
// disk are the wanted ones, and the next pass reads what the worker
// holds (its entries unknown) and sends the difference, the entry
// deleted behind its back added again (mapread.go), after which HAProxy
// holds the files again and a change is a few commands.
func TestMapPushFailureReadsBack(t *testing.T) {
	const n = 50
	l, _, cfgOf := httpLab(t, netip.AddrPort{}) // httpearly_test.go
	d := l.d
	ctx := context.Background()
	if _, err := d.Apply(ctx, cfgOf(routeTable(n, "/app", 100))); err != nil {
		t.Fatal(err)
	}
	hosts := render.HTTPMapFile(d.opts.Render.ACLDir, "gw_apps_gw_80", render.HTTPHosts)
	if _, err := d.rt.ExecChecked(ctx, []string{"del map " + hosts + " r0.example.com"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Apply(ctx, cfgOf(routeTable(n, "/moved", 100))); err == nil {
		t.Fatal("a set of an entry deleted behind the driver's back: no error")
	}
	wanted := ""
	for _, e := range render.HTTPMaps(routeTable(n, "/moved", 100))[render.HTTPHosts] {
		if e.Key == "r0.example.com" {
			wanted = e.Value
		}
	}
	if onDisk, running := fileMap(t, hosts)["r0.example.com"], showMap(ctx, t, d, hosts)["r0.example.com"]; onDisk != wanted || running != "" {
		t.Fatalf("after the failed pass: file %q, HAProxy %q; want %q on disk, none in HAProxy", onDisk, running, wanted)
	}
	res, err := d.Apply(ctx, cfgOf(routeTable(n, "/moved", 100)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops == 0 || res.Ops > 8 {
		t.Errorf("after a failure: %d commands, want the difference from the maps read back, 1..8 (a whole replace is more than %d)", res.Ops, n)
	}
	if got, want := showMap(ctx, t, d, hosts), fileMap(t, hosts); !maps.Equal(got, want) {
		t.Errorf("after the failure HAProxy's hosts map (%d) is not its file (%d)", len(got), len(want))
	}
	if res, err = d.Apply(ctx, cfgOf(routeTable(n, "/app", 100))); err != nil || res.Ops == 0 || res.Ops > 8 {
		t.Errorf("then a change: %d commands, %v; want 1..8", res.Ops, err)
	}
}
