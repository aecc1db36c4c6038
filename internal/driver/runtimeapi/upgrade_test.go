package runtimeapi

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// A controller upgraded while HAProxy keeps running finds HAProxy running
// the config an older release wrote: the same model, written the older
// way (here before the unbound slots carried the node check; the render
// package's TestOlderReleases proves that render.LooseUnchecked writes
// that release's text byte for byte). Its first pass applies the model
// with no reload, the servers and traffic stay as they were, and the file
// it persists is still the older text (what runs); the next reload that
// is due anyway (a new Service) writes the current rendering.
func TestUpgradeKeepsOlderRendering(t *testing.T) {
	lb := startLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := newTrackWorld(t, 2, 3, 2)
	config, _ := w.checkedNodes(model.Check{Enabled: true, Inter: 200 * time.Millisecond, Rise: 1, Fall: 2, HTTP: model.HTTPCheck{Path: "/healthz"}})
	master := haproxy.NewMaster(lb.p.MasterSocket)
	reloads := func() int {
		t.Helper()
		p, err := master.ShowProc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return p.Reloads
	}

	// The older release: it wrote the model, and a node joined after its
	// last reload sits in slots bound to no node (the file it persisted,
	// HAProxy running it).
	ro := lb.d.opts.Render
	ro.Legacy = render.LooseUnchecked
	layout, _ := plan.Assign(config(), nil, true)
	w.joined = 3
	joined, _ := plan.Assign(config(), layout, false)
	if err := os.WriteFile(lb.cfgPath, render.Config(config(), joined, ro), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := master.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	older := render.StructureHash(config(), joined, ro)
	waitDescription(ctx, t, lb.d.rt, older)
	w.checkTraffic("the older release")
	before := reloads()

	// The new release starts: the driver knows nothing yet.
	if _, err := lb.d.Apply(ctx, config()); err != nil {
		t.Fatal(err)
	}
	if n := reloads() - before; n != 0 {
		t.Fatalf("the first pass after the upgrade reloaded HAProxy %d times, want 0", n)
	}
	w.checkTraffic("after the upgrade")
	if !lb.d.flush(ctx) {
		t.Fatal("persist not done")
	}
	cfgText, err := os.ReadFile(lb.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfgText), "description "+render.DescriptionPrefix+older+"\n") || strings.Contains(string(cfgText), "disabled check") {
		t.Fatalf("persisted config is not the older rendering HAProxy runs (hash %s):\n%s", older, cfgText)
	}
	if drift, err := lb.d.Verify(ctx); err != nil || drift {
		t.Fatalf("verify after the upgrade: drift %v, %v", drift, err)
	}

	// A new Service: the reload it needs writes the current rendering,
	// whose unbound slots carry the node check.
	w.ports = append(w.ports, haproxytest.FreePort(t))
	res, err := lb.d.Apply(ctx, config())
	if err != nil || !res.Reloaded {
		t.Fatalf("a new Service: reloaded %v, %v; want a reload", res.Reloaded, err)
	}
	w.checkTraffic("new Service")
	if cfgText, err = os.ReadFile(lb.cfgPath); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfgText), "disabled check inter 200ms rise 1 fall 2 port") || lb.d.opts.Render.Legacy != 0 {
		t.Fatalf("after the reload: legacy %s, config without the unbound slots' node check:\n%s", lb.d.opts.Render.Legacy, cfgText)
	}
	if n := reloads() - before; n != 1 {
		t.Fatalf("%d reloads in all, want 1 (the new Service's)", n)
	}
}

// waitDescription polls the worker until it reports the structure hash.
func waitDescription(ctx context.Context, t *testing.T, rt *haproxy.Runtime, hash string) {
	t.Helper()
	for {
		info, err := rt.ShowInfo(ctx)
		if err == nil && info["description"] == render.DescriptionPrefix+hash {
			return
		}
		rt.Reset()
		select {
		case <-ctx.Done():
			t.Fatalf("HAProxy does not report %s: %v", hash, err)
		case <-time.After(20 * time.Millisecond): // poll interval, bounded by ctx
		}
	}
}
