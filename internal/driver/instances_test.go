package driver

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// recDriver records the models applied; while down it fails, while
// blocked it hangs until released.
type recDriver struct {
	mu      sync.Mutex
	applied []string
	down    bool
	block   chan struct{}
	again   int // the next passes that report work under way (Result.Again)
	// fronts: the frontends' changes each applied model was handed with
	// (WithFrontChanges), by its first frontend's name.
	fronts   map[string]*model.FrontendChanges
	attempts int             // Apply calls begun
	failing  map[string]bool // models that fail, by first frontend
}

func (d *recDriver) Apply(ctx context.Context, cfg model.Config) (Result, error) {
	d.mu.Lock()
	block, down := d.block, d.down || d.failing[cfg.Frontends[0].Name]
	d.attempts++
	d.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	}
	if down {
		return Result{}, errors.New("connection refused")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.applied = append(d.applied, cfg.Frontends[0].Name)
	if d.fronts == nil {
		d.fronts = map[string]*model.FrontendChanges{}
	}
	d.fronts[cfg.Frontends[0].Name] = FrontChangesOf(ctx)
	if d.again > 0 {
		d.again--
		return Result{Again: time.Millisecond}, nil
	}
	return Result{}, nil
}

func (d *recDriver) last() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.applied) == 0 {
		return ""
	}
	return d.applied[len(d.applied)-1]
}

func cfgNamed(n string) model.Config {
	return model.Config{Frontends: []model.Frontend{{Name: n}}, Changes: &model.Changes{}}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s", what)
		}
		time.Sleep(time.Millisecond) // poll interval
	}
}

// A hung instance and a failing one never hold up a healthy one; both
// converge on the newest model once they are back.
func TestInstancesAreIndependent(t *testing.T) {
	healthy := &recDriver{}
	hung := &recDriver{block: make(chan struct{})}
	failing := &recDriver{down: true}
	m := NewInstances([]Instance{{Name: "healthy", Driver: healthy}, {Name: "hung", Driver: hung}, {Name: "failing", Driver: failing}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)

	for _, n := range []string{"a", "b", "c"} {
		start := time.Now()
		if _, err := m.Apply(ctx, cfgNamed(n)); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Errorf("Apply took %v with a hung instance", d)
		}
		waitUntil(t, "healthy instance applies "+n, func() bool { return healthy.last() == n })
	}
	if hung.last() != "" || failing.last() != "" {
		t.Fatalf("hung %q, failing %q applied something", hung.last(), failing.last())
	}
	failing.mu.Lock()
	failing.down = false
	failing.mu.Unlock()
	close(hung.block)
	waitUntil(t, "failing instance converges on c", func() bool { return failing.last() == "c" })
	waitUntil(t, "hung instance converges on c", func() bool { return hung.last() == "c" })
}

// Each instance reports its own attempts: the failing one's errors are
// observed under its name only, the healthy one's successes under its.
func TestInstancesObserveEachOnItsOwn(t *testing.T) {
	var mu sync.Mutex
	fails, oks := map[string]int{}, map[string]int{}
	observe := func(name string) func(model.Config, Result, error, time.Duration) {
		return func(_ model.Config, _ Result, err error, _ time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fails[name]++
			} else {
				oks[name]++
			}
		}
	}
	count := func(m map[string]int, name string) int {
		mu.Lock()
		defer mu.Unlock()
		return m[name]
	}
	healthy, failing := &recDriver{}, &recDriver{down: true}
	m := NewInstances([]Instance{
		{Name: "healthy", Driver: healthy, Observe: observe("healthy")},
		{Name: "failing", Driver: failing, Observe: observe("failing")},
	}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	if _, err := m.Apply(ctx, cfgNamed("a")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the failing instance's retries observed", func() bool { return count(fails, "failing") >= 2 })
	waitUntil(t, "the healthy instance's attempt observed", func() bool { return count(oks, "healthy") == 1 })
	if n := count(fails, "healthy"); n != 0 {
		t.Errorf("healthy instance observed %d failures", n)
	}
	if n := count(oks, "failing"); n != 0 {
		t.Errorf("failing instance observed %d successes", n)
	}
}

// An instance whose driver has work under way (Result.Again) comes back
// and applies its model again, with no newer model handed over, until the
// work is done.
func TestInstancesComeBackForWorkUnderWay(t *testing.T) {
	d := &recDriver{again: 3}
	m := NewInstances([]Instance{{Name: "a", Driver: d}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	if _, err := m.Apply(ctx, cfgNamed("a")); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.applied)
	}
	waitUntil(t, "the model applied 4 times", func() bool { return count() == 4 })
	// The work done, nothing comes back: the next model is the fifth
	// pass.
	if _, err := m.Apply(ctx, cfgNamed("b")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the next model applied", func() bool { return d.last() == "b" })
	if n := count(); n != 5 {
		t.Errorf("applied %d times, want 5", n)
	}
}

// The frontends' changes a pass hands over (WithFrontChanges) reach an
// instance's driver with that pass's model only: not with a model that
// follows one the instance skipped, nor with a retry after a failure,
// nor with a later model handed over without them (a stale list of
// another pass). They are a value of the pass, never kept with a model.
func TestInstancesFrontChangesOnlyWithTheirPass(t *testing.T) {
	fc := func(of model.Config) *model.FrontendChanges {
		return &model.FrontendChanges{Of: of.Frontends, Names: []string{of.Frontends[0].Name}}
	}
	d := &recDriver{}
	m := NewInstances([]Instance{{Name: "a", Driver: d}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go m.Run(ctx)
	frontsOf := func(name string) (*model.FrontendChanges, bool) {
		d.mu.Lock()
		defer d.mu.Unlock()
		f, ok := d.fronts[name]
		return f, ok
	}
	apply := func(c model.Config, fronts *model.FrontendChanges) {
		t.Helper()
		if _, err := m.Apply(WithFrontChanges(ctx, fronts), c); err != nil {
			t.Fatal(err)
		}
	}
	set := func(f func()) {
		d.mu.Lock()
		defer d.mu.Unlock()
		f()
	}
	attempts := func() (n int) { set(func() { n = d.attempts }); return n }
	for _, tc := range []struct {
		name string
		run  func() string // the model to look at
		want bool          // handed its pass's changes
	}{
		{"taken", func() string {
			c := cfgNamed("taken")
			apply(c, fc(c))
			return "taken"
		}, true},
		{"after a model without them", func() string {
			c := cfgNamed("said")
			apply(c, fc(c))
			waitUntil(t, "said applied", func() bool { return d.last() == "said" })
			apply(cfgNamed("unsaid"), nil)
			return "unsaid"
		}, false},
		{"after a skipped model", func() string {
			block := make(chan struct{})
			set(func() { d.block = block })
			n := attempts()
			apply(cfgNamed("busy"), nil)
			waitUntil(t, "busy taken", func() bool { return attempts() > n })
			b, c := cfgNamed("skipped"), cfgNamed("newest")
			apply(b, fc(b))
			apply(c, fc(c))
			set(func() { d.block = nil })
			close(block)
			return "newest"
		}, false},
		{"after a failure", func() string {
			set(func() { d.failing = map[string]bool{"failed": true} })
			n := attempts()
			f, c := cfgNamed("failed"), cfgNamed("after-failure")
			apply(f, fc(f))
			waitUntil(t, "failed failed once", func() bool { return attempts() > n })
			apply(c, fc(c)) // its changes are against failed, which does not run
			return "after-failure"
		}, false},
	} {
		name := tc.run()
		waitUntil(t, tc.name+": "+name+" applied", func() bool { _, ok := frontsOf(name); return ok })
		if got, _ := frontsOf(name); (got != nil) != tc.want {
			t.Errorf("%s: %s applied with frontends' changes %v, want %v", tc.name, name, got != nil, tc.want)
		}
	}
}
