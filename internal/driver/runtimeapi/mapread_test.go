package runtimeapi

import (
	"context"
	"maps"
	"net/netip"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

func TestParseShowMap(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       map[string]string
		bad        bool
	}{
		{"empty map", "", map[string]string{}, false},
		{"entries", "0x55d0c8a0 a.example.com 1\n0x55d0c8b0 b.example.com 2", map[string]string{"a.example.com": "1", "b.example.com": "2"}, false},
		{"value with spaces", "0x1 k v w  x", map[string]string{"k": "v w  x"}, false},
		{"no value", "0x1 k", map[string]string{"k": ""}, false},
		{"key twice", "0x1 k 1\n0x2 k 2", nil, true},
		{"not an entry", "Unknown map identifier. Please use #<id> or <file>.", nil, true},
		{"no key", "0x1 ", nil, true},
		{"a blank line", "0x1 k 1\n\n0x2 j 2", nil, true},
		{"bare reference", "0x", nil, true},
	} {
		got, err := parseShowMap(c.text)
		if c.bad {
			if err == nil {
				t.Errorf("%s: %v, want an error", c.name, got)
			}
			continue
		}
		if err != nil || !maps.Equal(got, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}

// TestRestartedDriverReadsMapsBack: a driver that starts beside a
// HAProxy running its maps (a controller restarted) reads them back and
// sends only the difference: none in an unchanged world, exactly the
// changed entries otherwise; it used to replace every map whole (the
// 10,166 commands of a restart at 10,000 Services, issue 29). A map
// whose dump does not look right (a key HAProxy holds twice) is replaced
// whole. No reload throughout; HAProxy's maps are the files after each
// step.
func TestRestartedDriverReadsMapsBack(t *testing.T) {
	const n = 300
	l := startMapLab(t)
	ctx := context.Background()
	port := uint16(haproxytest.FreePort(t))
	none := netip.MustParseAddrPort("127.0.0.1:1")
	cfgOf := func(path0 string) model.Config { return httpConfig(port, routeTable(n, path0, 100), none, none) }
	if _, err := l.d.Apply(ctx, cfgOf("/app")); err != nil {
		t.Fatal(err)
	}
	reloads := l.reloads(ctx, t)
	restart := func() *HAProxy {
		d := NewHAProxy(l.d.opts)
		t.Cleanup(func() { _ = d.Close() })
		return d
	}
	// files are the HTTP map files HAProxy reads, by path, with their
	// entries (as on disk).
	files := func(d *HAProxy) map[string]map[string]string {
		if err := d.listMaps(ctx); err != nil {
			t.Fatal(err)
		}
		out := map[string]map[string]string{}
		for _, kind := range render.HTTPMapKinds {
			p := render.HTTPMapFile(d.opts.Render.ACLDir, "gw_apps_gw_80", kind)
			if read, _ := d.held.reads(d.pid, p); read {
				out[p] = fileMap(t, p)
			}
		}
		if len(out) == 0 {
			t.Fatal("HAProxy reads no HTTP map")
		}
		return out
	}
	same := func(step string, d *HAProxy, want map[string]map[string]string) {
		t.Helper()
		for p, w := range want {
			if got := showMap(ctx, t, d, p); !maps.Equal(got, w) {
				t.Errorf("%s: HAProxy's %s (%d entries) is not its file (%d)", step, p, len(got), len(w))
			}
		}
	}

	// A version prepared and never committed (a controller killed in a
	// whole replace) is not what the worker serves: not read back.
	hostsMap := render.HTTPMapFile(l.d.opts.Render.ACLDir, "gw_apps_gw_80", render.HTTPHosts)
	ans, err := l.d.rt.ExecChecked(ctx, []string{"prepare map " + hostsMap})
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimPrefix(ans[0], "New version created: ")
	if _, err := l.d.rt.ExecChecked(ctx, []string{"add map @" + v + " " + hostsMap + " uncommitted.example.com 1"}); err != nil {
		t.Fatal(err)
	}

	// mapOps: the map commands a restarted driver's first pass sent (on
	// 3.4 it also publishes its backends created at runtime again).
	d := restart()
	if _, err := d.Apply(ctx, cfgOf("/app")); err != nil {
		t.Fatal(err)
	}
	if d.mapOps != 0 {
		t.Errorf("unchanged world: %d map commands, want 0", d.mapOps)
	}
	same("unchanged", d, files(d))

	before := files(d)
	d = restart()
	if _, err := d.Apply(ctx, cfgOf("/moved")); err != nil {
		t.Fatal(err)
	}
	after := files(d)
	changed := 0 // entries added, changed or deleted between the files
	for p, a := range after {
		for k, v := range a {
			if old, ok := before[p][k]; !ok || old != v {
				changed++
			}
		}
		for k := range before[p] {
			if _, ok := a[k]; !ok {
				changed++
			}
		}
	}
	if changed == 0 || d.mapOps != changed {
		t.Errorf("a route changed while the controller was down: %d map commands, want the %d entries changed", d.mapOps, changed)
	}
	same("changed", d, after)

	// A key HAProxy holds twice: that map is replaced whole.
	var hosts string
	for p := range after {
		if p == render.HTTPMapFile(d.opts.Render.ACLDir, "gw_apps_gw_80", render.HTTPHosts) {
			hosts = p
		}
	}
	if hosts == "" {
		t.Fatal("HAProxy reads no hosts map")
	}
	if _, err := d.rt.ExecChecked(ctx, []string{"add map " + hosts + " r1.example.com twice"}); err != nil {
		t.Fatal(err)
	}
	d = restart()
	if _, err := d.Apply(ctx, cfgOf("/moved")); err != nil {
		t.Fatal(err)
	}
	if whole := len(after[hosts]) + 2; d.mapOps != whole {
		t.Errorf("a key held twice: %d map commands, want the hosts map replaced whole (%d)", d.mapOps, whole)
	}
	same("after the whole replace", d, after)
	if got := l.reloads(ctx, t); got != reloads {
		t.Errorf("%d reloads, want 0", got-reloads)
	}
}

// TestRestartedDriverKeepsSourceRanges: a driver that starts beside a
// HAProxy holding its source ranges (a controller restarted) pushes none
// of the ACL files the worker holds line for line (`show acl`), and
// only the file whose ranges changed while it was down, whole (prepare,
// its one line, commit); it used to push every ACL file whole. No
// reload; the ranges in force are the new ones.
func TestRestartedDriverKeepsSourceRanges(t *testing.T) {
	l := startLab(t)
	w := newRangesWorld(t)
	ctx := context.Background()
	if _, err := l.d.Apply(ctx, w.config(pfxs("127.0.0.2/32", "192.0.2.0/24"), 0)); err != nil {
		t.Fatal(err)
	}
	restart := func() *HAProxy {
		d := NewHAProxy(l.d.opts)
		t.Cleanup(func() { _ = d.Close() })
		return d
	}
	d := restart()
	res, err := d.Apply(ctx, w.config(pfxs("127.0.0.2/32", "192.0.2.0/24"), 0))
	if err != nil || res.Reloaded || res.Ops != 0 {
		t.Errorf("unchanged world: %d Runtime API commands, reloaded %v, %v; want 0, none", res.Ops, res.Reloaded, err)
	}
	d = restart()
	res, err = d.Apply(ctx, w.config(pfxs("127.0.0.3/32"), 0))
	if err != nil || res.Reloaded || res.Ops != 3 {
		t.Errorf("ranges changed while it was down: %d Runtime API commands, reloaded %v, %v; want 3 (the IPv4 file replaced), none", res.Ops, res.Reloaded, err)
	}
	expectServed(t, w.restricted, map[string]bool{"127.0.0.2": false, "127.0.0.3": true, "127.0.0.4": false})
}
