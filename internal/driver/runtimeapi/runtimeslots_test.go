package runtimeapi

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// TestSpareSlotsCreatedAtRuntime: a spare's free slots are not in the
// config file (one comment names them); HAProxy holds those of the free
// spares (created after the reload), not an occupied spare's; a backend
// taking a free spare is served with no reload, its slots in order (s1,
// s2, ... as `show servers state` reads them);
// Verify finds no drift; the file written after the pass holds the slot
// in use; after HAProxy reloaded the file behind the controller's back
// (as a restarted HAProxy would load it: every free slot absent), the
// controller converges with no reload of its own, a new backend's spare
// gets its slots created in its pass, and a restarted controller
// converges too.
func TestSpareSlotsCreatedAtRuntime(t *testing.T) {
	lb := startPoolLab(t, 300*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := newPoolWorld(t)
	nodeOf := map[string]int{"be_a": 0, "be_b": 1, "be_c": 2}
	if _, err := lb.d.Apply(ctx, w.config([]string{"be_a"}, nodeOf)); err != nil {
		t.Fatal(err)
	}
	fileSlots := func() map[string]int {
		t.Helper()
		f, err := os.Open(lb.cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		_, slots, err := render.ScanRuntimeSlots(f)
		if err != nil {
			t.Fatal(err)
		}
		return slots
	}
	servers := func() map[string][]haproxy.ServerState {
		t.Helper()
		states, err := haproxy.NewRuntime(lb.p.StatsSocket).ShowServersState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]haproxy.ServerState{}
		for _, s := range states {
			out[s.Backend] = append(out[s.Backend], s)
		}
		return out
	}
	// The free spares' slots were created after the reload; an occupied
	// spare's free ones are absent.
	slots, running := fileSlots(), servers()
	spareA := lb.d.HAProxyBackend("be_a")
	free := 0
	for be, n := range slots {
		inUse := slices.ContainsFunc(running[be], func(s haproxy.ServerState) bool { return !s.Maint() })
		switch {
		case inUse && len(running[be]) >= n:
			t.Errorf("%s: HAProxy has %d servers, the file names %d slots: want its free ones absent", be, len(running[be]), n)
		case !inUse && len(running[be]) != n:
			t.Errorf("free spare %s: HAProxy has %d servers, want its %d slots created after the reload", be, len(running[be]), n)
		case !inUse:
			free++
		}
	}
	if n, ok := slots[spareA]; !ok || len(running[spareA]) >= n {
		t.Fatalf("be_a's spare %s: %d servers in HAProxy, file %v: want slots left out", spareA, len(running[spareA]), slots)
	}
	if free == 0 {
		t.Fatalf("no free spare named by the file (%v)", slots)
	}

	noReload := lb.noReload(ctx, t)
	noReload("a new backend in a free spare", w.config([]string{"be_b"}, nodeOf))
	if got := w.answers(4); got["node-1"] != 4 {
		t.Fatalf("be_b: L1 answered %v, want node-1 only", got)
	}
	spareB := lb.d.HAProxyBackend("be_b")
	running = servers()
	if len(running[spareB]) == 0 {
		t.Fatalf("be_b's spare %s has no server in HAProxy", spareB)
	}
	for i, s := range running[spareB] {
		if idx, ok := plan.SlotIndex(s.Server); !ok || idx != i {
			t.Fatalf("%s lists %s at position %d: want slots in order", spareB, s.Server, i)
		}
	}
	if drift, err := lb.d.Verify(ctx); err != nil || drift {
		t.Fatalf("Verify: drift %v, %v; want none (absent slots are no drift)", drift, err)
	}
	if !lb.d.flush(ctx) {
		t.Fatal("flush wrote nothing")
	}
	text, err := os.ReadFile(lb.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	section, _, _ := strings.Cut(strings.SplitN(string(text), "\nbackend "+spareB+"\n", 2)[1], "\n\n")
	if !strings.Contains(section, "server s1 "+w.nodes[1].IP+":") {
		t.Errorf("the file after the pass does not hold %s's slot in use:\n%s", spareB, section)
	}

	// HAProxy loads the file again behind the controller's back.
	reloads := lb.reloads(ctx, t)
	if _, err := haproxy.NewMaster(lb.p.MasterSocket).ReloadReport(ctx); err != nil {
		t.Fatal(err)
	}
	if drift, err := lb.d.Verify(ctx); err != nil || !drift {
		t.Fatalf("Verify after HAProxy's own reload: drift %v, %v; want drift", drift, err)
	}
	res, err := lb.d.Apply(ctx, w.config([]string{"be_b"}, nodeOf))
	if err != nil || res.Reloaded || lb.reloads(ctx, t) != reloads+1 {
		t.Fatalf("after HAProxy's own reload: %+v, %v, %d reloads; want none of ours", res, err, lb.reloads(ctx, t)-reloads)
	}
	if got := w.answers(4); got["node-1"] != 4 {
		t.Fatalf("be_b after HAProxy's own reload: L1 answered %v", got)
	}
	noReload = lb.noReload(ctx, t)
	noReload("another new backend after it", w.config([]string{"be_b", "be_c"}, nodeOf))
	if got := w.answers(40); got["node-2"] == 0 {
		t.Fatalf("be_c: L1 answered %v, want node-2 too", got)
	}

	// A restarted controller: no reload.
	_ = lb.d.Close()
	lb.d = NewHAProxy(lb.options(poolOptions(300 * time.Millisecond)))
	noReload("restart", w.config([]string{"be_b", "be_c"}, nodeOf))
	if got := w.answers(40); got["node-1"] == 0 || got["node-2"] == 0 {
		t.Fatalf("after a restart: L1 answered %v", got)
	}
}
