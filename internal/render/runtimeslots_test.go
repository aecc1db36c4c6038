package render

import (
	"bytes"
	"maps"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// runtimeSlotsSample is three spares of sample()'s web class: one with two
// servers, one free, one with a server only in its third slot; a spare
// checked by itself and one balanced by source (both keep every slot).
func runtimeSlotsSample() (model.Config, model.Layout) {
	web := sample().Backends[0]
	spare := func(name string, servers ...model.Server) *model.Backend {
		b := *web
		b.Name, b.Service, b.Servers, b.Check = name, "", servers, model.Check{}
		return &b
	}
	a := model.Server{Addr: ap("10.0.0.1"), Port: 30080}
	b := model.Server{Addr: ap("10.0.0.2"), Port: 30080}
	checked := spare("_pool_3")
	checked.Check = model.Check{Enabled: true}
	hashed := spare("_pool_4")
	hashed.Balance = "source"
	cfg := model.Config{Backends: []*model.Backend{spare("_pool_0", a, b), spare("_pool_1"), spare("_pool_2"), checked, hashed}}
	layout, _ := plan.Assign(cfg, nil, true)
	// _pool_2's server in its third slot, the first two free.
	l := layout["_pool_2"]
	l[2].Used, l[2].Server = true, b
	return cfg, layout
}

// With RuntimeSlots a spare's free slots after its last one in use are
// not in the file, one comment names them, the structure hash is the
// same, HAProxy accepts the file, and ScanRuntimeSlots reads the slots
// back.
func TestRuntimeSlots(t *testing.T) {
	cfg, layout := runtimeSlotsSample()
	on := opts
	on.RuntimeSlots = true
	got := Config(cfg, layout, on)
	golden.Assert(t, "runtimeslots.cfg", got)
	golden.HAProxyAccepts(t, got)

	if StructureHash(cfg, layout, on) != StructureHash(cfg, layout, opts) {
		t.Fatal("the structure hash depends on which slots are in the file")
	}
	full := Config(cfg, layout, opts)
	if n, m := strings.Count(string(got), "\tserver "), strings.Count(string(full), "\tserver "); n >= m {
		t.Fatalf("%d server lines with RuntimeSlots, %d without: want fewer", n, m)
	}
	hash, slots, err := ScanRuntimeSlots(bytes.NewReader(got))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"_pool_0": len(layout["_pool_0"]), "_pool_1": len(layout["_pool_1"]), "_pool_2": len(layout["_pool_2"])}
	if hash != StructureHash(cfg, layout, on) || !maps.Equal(slots, want) {
		t.Fatalf("scanned hash %q slots %v, want %q %v", hash, slots, StructureHash(cfg, layout, on), want)
	}
	for _, name := range []string{"_pool_0", "_pool_1", "_pool_2"} {
		be := cfg.Backends[0]
		for _, b := range cfg.Backends {
			if b.Name == name {
				be = b
			}
		}
		n := FileSlots(be, layout[name], on)
		for i, s := range layout[name] {
			if i >= n && (s.Used || s.Track != 0) {
				t.Fatalf("%s/%s holds a server and is left out of the file", name, model.SlotName(i))
			}
		}
	}
	if _, slots, _ := ScanRuntimeSlots(bytes.NewReader(full)); len(slots) != 0 {
		t.Fatalf("without RuntimeSlots the file names slots created at runtime: %v", slots)
	}
}

// Only spares of a class HAProxy 2.6 can add servers to, that the
// driver can describe with keywords alone, take it.
func TestRuntimeSlotsOK(t *testing.T) {
	on := opts
	on.RuntimeSlots = true
	base := model.Backend{Name: "_pool_7", Balance: "roundrobin"}
	tests := []struct {
		name string
		edit func(*model.Backend)
		opts Options
		want bool
	}{
		{"spare, roundrobin", func(*model.Backend) {}, on, true},
		{"option off", func(*model.Backend) {}, opts, false},
		{"not a spare", func(b *model.Backend) { b.Name = "be_default_web_80" }, on, false},
		{"static-rr", func(b *model.Backend) { b.Balance = "static-rr" }, on, false},
		{"hashed", func(b *model.Backend) { b.Balance = "source" }, on, false},
		{"checked", func(b *model.Backend) { b.Check.Enabled = true }, on, false},
		{"affinity", func(b *model.Backend) { b.Affinity = 1 }, on, false},
		{"cookie", func(b *model.Backend) { b.Cookie = &model.CookieAffinity{} }, on, false},
		{"tracks nodes", func(b *model.Backend) { b.TrackNodes = true }, on, true},
		{"legacy loose checks", func(*model.Backend) {}, Options{RuntimeSlots: true, Legacy: LooseChecked}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := base
			tc.edit(&b)
			if got := RuntimeSlotsOK(&b, tc.opts); got != tc.want {
				t.Fatalf("RuntimeSlotsOK = %v, want %v", got, tc.want)
			}
		})
	}
}
