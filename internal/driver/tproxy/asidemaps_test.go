package tproxy

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

// readBackFiles are the map files the log's "reading running maps back"
// lines name.
func readBackFiles(log string) []string {
	var out []string
	re := regexp.MustCompile(`msg="reading running maps back" maps=\d+ files="?\[([^\]]*)\]`)
	for _, m := range re.FindAllStringSubmatch(log, -1) {
		out = append(out, strings.Fields(m[1])...)
	}
	slices.Sort(out)
	return out
}

// mapFiles are the map files of dir with their bytes.
func mapFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*.map"))
	out := map[string]string{}
	for _, p := range paths {
		body, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = string(body)
	}
	return out
}

// TestGrowthAsideReadsBackRewrittenMapsOnly (issue 29): after the pool's
// growth reload aside, the new worker holds the maps the reload wrote,
// except a file a pass beside the reload rewrote (it read that file at
// some moment of the reload, in either version). Only those files are
// read back (`show map FILE`) at the reload's end; every map the worker
// reads used to be. The maps the worker holds are their files after.
func TestGrowthAsideReadsBackRewrittenMapsOnly(t *testing.T) {
	h := heldReloads(t)
	l := startDPWith(t, render.ListenersTProxy, spares.Policy{Spares: 3, Other: 1, LowWater: 1})
	logs := &haproxytest.LockedBuffer{}
	l.hopts.GrowAside = true
	l.hopts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l.restart(t, l.hopts)
	svc := l.outgrowing(t)
	servers := map[uint16]int{80: 1, 81: 0}
	cfgOf := func() model.Config {
		var cfg model.Config
		for _, p := range slices.Sorted(maps.Keys(servers)) {
			fe, be := svc(fmt.Sprintf("p%d", p), p, servers[p])
			cfg.Frontends, cfg.Backends = append(cfg.Frontends, fe), append(cfg.Backends, be)
		}
		return cfg
	}
	l.apply(t, cfgOf())

	// p81's servers outgrow its spare: the pool grows, a reload, held.
	h.hold(t)
	servers[81] = plan4 + 1
	res, err := l.applyWithin(t, h, "the growth", cfgOf())
	if err != nil || res.Reloaded || res.Again <= 0 {
		t.Fatalf("the growth: %v, reloaded %v, again %v; want its reload aside", err, res.Reloaded, res.Again)
	}
	h.waitHeld(t)
	written := mapFiles(t, l.ropts.ACLDir) // what the reload wrote, the new worker's unless rewritten
	// A new Service in a free spare, beside the reload: its address and
	// port in the listener's map.
	servers[82] = 1
	res, err = l.applyWithin(t, h, "a new Service beside the reload", cfgOf())
	if (err != nil && !errors.Is(err, driver.ErrDeferred)) || res.Reloaded {
		t.Fatalf("a new Service beside the reload: %v, reloaded %v", err, res.Reloaded)
	}
	var rewritten []string
	for p, body := range mapFiles(t, l.ropts.ACLDir) {
		if written[p] != body {
			rewritten = append(rewritten, p)
		}
	}
	slices.Sort(rewritten)
	if len(rewritten) == 0 || len(rewritten) == len(written) {
		t.Fatalf("the pass beside the reload rewrote %v of %d map files: the test needs some rewritten, some not", rewritten, len(written))
	}
	mark := len(logs.String())

	h.release(t)
	l.settle(t, cfgOf())
	if got := readBackFiles(logs.String()[mark:]); !slices.Equal(got, rewritten) {
		t.Errorf("maps read back after the growth reload: %v; want only those a pass rewrote beside it: %v", got, rewritten)
	}
	l.mapsAreFiles(t)
	want := map[uint16]int{}
	for p, n := range servers {
		want[p] = n
	}
	l.serves(t, want)
}
