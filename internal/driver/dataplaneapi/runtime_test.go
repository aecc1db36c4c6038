package dataplaneapi

import (
	"context"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Server churn goes through the runtime endpoints: HAProxy serves each
// change when Apply returns, without a reload and without a configuration
// write; the configuration follows once the slots settle, still without a
// reload, one write per slot that really changed.
func TestContractChurnWithoutReload(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		be := a.seedBackend(t, "be_hks_churn")
		d := a.driver(Options{Seed: be, PersistQuiet: time.Hour, PersistMaxDelay: time.Hour})
		apply(t, d, seedCfg(be, "127.81.2.1:30080", "127.81.2.2:30080", "127.81.2.3:30080"))
		r0, v0 := a.reloads(t), a.version(t)
		steps := []struct {
			name    string
			servers []string
		}{
			{"endpoint gone", []string{"127.81.2.1:30080", "127.81.2.2:30080"}},
			{"node excluded", []string{"127.81.2.1:30080"}},
			{"node back", []string{"127.81.2.1:30080", "127.81.2.2:30080"}},
			{"new node", []string{"127.81.2.1:30080", "127.81.2.2:30080", "127.81.2.9:30080"}},
			{"address changed", []string{"127.81.2.1:30080", "127.81.2.2:30080", "127.81.2.10:30080"}},
			{"port changed", []string{"127.81.2.1:30081", "127.81.2.2:30081", "127.81.2.10:30081"}},
		}
		var last model.Config
		for _, s := range steps {
			last = seedCfg(be, s.servers...)
			res, err := d.Apply(context.Background(), last)
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			if res.Reloaded {
				t.Errorf("%s: reloaded (%v)", s.name, res.Reasons)
			}
			if got := a.serving(t, be); !maps.Equal(got, set(s.servers...)) {
				t.Errorf("%s: serving %v, want %v", s.name, got, s.servers)
			}
		}
		if v := a.version(t); v != v0 {
			t.Errorf("churn wrote the configuration %d times while it came, want 0", v-v0)
		}
		if err := d.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		a.wantConfigured(t, be, last)
		// 4 slots: three of them changed (the fourth changed and back).
		if v := a.version(t); v-v0 != 3 {
			t.Errorf("writing the configuration took %d writes, want 3 (one per slot that changed)", v-v0)
		}
		if r := a.reloads(t); r != r0 {
			t.Errorf("churn reloaded HAProxy %d times, want 0", r-r0)
		}
	})
}

// Runtime changes are lost when HAProxy reloads or restarts behind the
// driver's back before the configuration has them: the next resync
// (Invalidate) finds the new worker and sets them again; a new controller
// (a fresh driver) finds what runs, sets what differs, and writes the
// configuration.
func TestContractRestartsConverge(t *testing.T) {
	run(t, func(t *testing.T, a *api) {
		be := a.seedBackend(t, "be_hks_restarts")
		slow := Options{Seed: be, PersistQuiet: time.Hour, PersistMaxDelay: time.Hour}
		d := a.driver(slow)
		apply(t, d, seedCfg(be, "127.81.12.1:30080", "127.81.12.2:30080"))
		cfg := seedCfg(be, "127.81.12.1:30080", "127.81.12.3:30080")
		apply(t, d, cfg)
		a.wantServing(t, be, cfg)

		a.restartHAProxy(t) // runs the configuration: .2, not .3
		if got := a.serving(t, be); maps.Equal(got, servers(cfg)) {
			t.Fatalf("after a restart HAProxy still serves %v: the case did not happen", got)
		}
		d.Invalidate() // the resync
		r0 := a.reloads(t)
		apply(t, d, cfg)
		a.wantServing(t, be, cfg)

		if r := a.reloads(t); r != r0 {
			t.Errorf("converging after the resync took %d reloads, want 0", r-r0)
		}

		a.restartHAProxy(t)
		r0 = a.reloads(t)
		fresh := a.driver(slow) // a new controller, the configuration still behind
		apply(t, fresh, cfg)
		a.wantServing(t, be, cfg)
		if err := fresh.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		a.wantConfigured(t, be, cfg)
		if r := a.reloads(t); r != r0 {
			t.Errorf("a new controller's convergence took %d reloads, want 0", r-r0)
		}
	})
}

// restartHAProxy makes HAProxy start again from the API's configuration,
// outside the API: the test server restarts it; a real HAProxy reloads
// through its master (the same for what runs: a new worker, without the
// runtime changes).
func (a *api) restartHAProxy(t *testing.T) {
	t.Helper()
	if a.srv != nil {
		a.srv.Restart()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.master.Reload(ctx); err != nil {
		t.Fatal(err)
	}
}

// The configuration follows on its own once a slot is quiet, one write per
// slot that changed; a slot that changes and changes back is not written.
func TestPersistDebounced(t *testing.T) {
	a := apis(t)[0]
	be := a.seedBackend(t, "be_hks_debounce")
	d := a.driver(Options{Seed: be, PersistQuiet: 20 * time.Millisecond, PersistMaxDelay: time.Second})
	base := seedCfg(be, "127.81.13.1:30080", "127.81.13.2:30080")
	apply(t, d, base)
	if err := d.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	v0 := a.version(t)
	apply(t, d, seedCfg(be, "127.81.13.1:30080"))
	apply(t, d, base) // back before it was written
	d.mu.Lock()
	due := len(d.dirty)
	d.mu.Unlock()
	if due != 0 {
		t.Errorf("%d slots due after a change and its undoing, want 0", due)
	}
	moved := seedCfg(be, "127.81.13.1:30080", "127.81.13.3:30080")
	apply(t, d, moved)
	deadline := time.Now().Add(10 * time.Second)
	for a.version(t) == v0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // poll interval
	}
	if err := d.Flush(context.Background()); err != nil { // waits for the write under way
		t.Fatal(err)
	}
	a.wantConfigured(t, be, moved)
	if v := a.version(t); v-v0 != 1 {
		t.Errorf("%d configuration writes, want 1 (the one slot that changed)", v-v0)
	}
}

// While changes keep coming, no slot is written to the configuration
// (each write costs the API a check of the whole file, which slows the
// passes meanwhile), even one of a backend no longer changing; once they
// stop for PersistQuiet, the slots are.
func TestPersistWaitsForALull(t *testing.T) {
	a := apis(t)[0]
	d := a.driver(Options{PersistQuiet: 500 * time.Millisecond, PersistMaxDelay: time.Minute})
	// Each Service's model is built once per server set and handed out
	// again while it does not change, as the desired package does.
	built := map[string]model.Config{}
	svc := func(ns, port, server string) model.Config {
		if c, ok := built[ns+server]; ok {
			return c
		}
		p, _ := strconv.Atoi(port)
		c := classCfg(t, a, ns, "127.81.14.1", uint16(p), "be_"+ns+"_web_80", "127.81.14.2:30080", server)
		built[ns+server] = c
		return c
	}
	cfgOf := func(first, second string) model.Config {
		one, two := svc("hks-lull", "20001", first), svc("hks-lull2", "20002", second)
		return model.Config{Frontends: []model.Frontend{one.Frontends[0], two.Frontends[0]}, Backends: []*model.Backend{one.Backends[0], two.Backends[0]}}
	}
	apply(t, d, cfgOf("127.81.14.3:30080", "127.81.14.3:30080"))
	if err := d.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	v0 := a.version(t)
	apply(t, d, cfgOf("127.81.14.4:30080", "127.81.14.3:30080"))
	// The other Service's server flips every 20 ms for 1 s.
	for i := range 50 {
		second := "127.81.14.3:30080"
		if i%2 == 0 {
			second = "127.81.14.5:30080"
		}
		apply(t, d, cfgOf("127.81.14.4:30080", second))
		time.Sleep(20 * time.Millisecond) // the pace of the changes
	}
	if v := a.version(t); v != v0 {
		t.Errorf("the configuration was written %d times while changes kept coming", v-v0)
	}
	deadline := time.Now().Add(10 * time.Second)
	for a.version(t) == v0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // poll interval
	}
	if err := d.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.wantConfigured(t, "be_hks-lull_web_80", model.Config{Backends: cfgOf("127.81.14.4:30080", "127.81.14.3:30080").Backends[:1]})
}
