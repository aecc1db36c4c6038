package runtimeapi

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// TestAppliedBeforePoolFile (issue 29): a pass with a pool tells
// driver.Applied once the model runs, its route map file naming the new
// backend's spare already, and writes pool.json only after: a companion
// (the kernel's set elements, tproxy.Ordered) does not wait for that
// file. pool.json names the new backend once the pass returns.
func TestAppliedBeforePoolFile(t *testing.T) {
	lb := startPoolLab(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := newPoolWorld(t)
	nodeOf := map[string]int{"be_a": 0, "be_b": 1}
	if _, err := lb.d.Apply(ctx, w.config([]string{"be_a"}, nodeOf)); err != nil {
		t.Fatal(err)
	}
	pool := PoolFile(lb.cfgPath)
	routeMap := render.RouteMapFile(lb.d.opts.Render.ACLDir, "gw_l1", 0)
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	calls := 0
	var poolThen, mapThen string
	actx := driver.WithApplied(ctx, func() {
		calls++
		poolThen, mapThen = read(pool), read(routeMap)
	})
	if _, err := lb.d.Apply(actx, w.config([]string{"be_a", "be_b"}, nodeOf)); err != nil {
		t.Fatal(err)
	}
	spare := lb.d.HAProxyBackend("be_b")
	if calls != 1 {
		t.Fatalf("Applied told %d times, want once", calls)
	}
	if !strings.Contains(mapThen, spare) {
		t.Errorf("when Applied was told, the route map did not name be_b's spare %s:\n%s", spare, mapThen)
	}
	if strings.Contains(poolThen, `"be_b"`) {
		t.Errorf("pool.json was written before Applied was told:\n%s", poolThen)
	}
	if !strings.Contains(read(pool), `"be_b"`) {
		t.Errorf("pool.json does not name be_b after the pass:\n%s", read(pool))
	}
}
