package spares

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// servers is n addresses.
func servers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.0.%d.%d:1", i/250, i%250+1)
	}
	return out
}

// backends is one backend per count (named s00000, s00001, ...), each
// with that many servers, sorted by name.
func backends(counts ...int) model.Config {
	bs := make([]*model.Backend, len(counts))
	for i, n := range counts {
		bs[i] = be(fmt.Sprintf("s%05d", i), 0, servers(n)...)
	}
	return cfgOf(bs...)
}

// repeat is n times k.
func repeat(n, k int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = k
	}
	return out
}

// freeSlots counts the free spares of s by declared slots.
func freeSlots(s State) map[int]int {
	out := map[int]int{}
	for _, sp := range s.Spares {
		if sp.Occupant == "" {
			out[sp.Slots]++
		}
	}
	return out
}

// TestClassSizedSpares: behind the fixed listener (Policy.Sized) a
// grown pool's free spares carry the slots of the class's 90th
// percentile backend (at most MaxClassSlots; 0 when that is 4), the
// large spares come on top, and a class grows in batches.
func TestClassSizedSpares(t *testing.T) {
	pol := Policy{Spares: 4, Other: 1, LowWater: 1, Sized: true}
	for _, tc := range []struct {
		name   string
		counts []int
		free   map[int]int // free spares by declared slots after the growth
	}{
		{"small backends: 4-slot spares", repeat(10, 2), map[int]int{0: 4, 16: 1}},
		{"5 servers: 8 slots", repeat(10, 5), map[int]int{8: 4, 16: 1}},
		{"85% small, 15% of 5: 8 slots", append(repeat(85, 1), repeat(15, 5)...), map[int]int{8: 4 + 2*(100/BatchShare), 16: 1}},
		{"95% small, 5% of 5: 4 slots", append(repeat(95, 1), repeat(5, 5)...), map[int]int{0: 4 + 2*(100/BatchShare), 16: 1}},
		{"no servers yet: 4 slots", repeat(3, 0), map[int]int{0: 4, 16: 1}},
		{"40 servers: bounded, the large spare sized to them", repeat(10, 40), map[int]int{MaxClassSlots: 4, 64: 1}},
		{"1,000 of 5: two batches of 1/16", repeat(1000, 5), map[int]int{8: 4 + 2*(1000/BatchShare), 16: 1}},
		{"10,000 of 5: the batch bounded, large spares batched", repeat(10000, 5), map[int]int{8: 4 + 2*MaxBatch, 16: min(10000/LargeShare, MaxLarge)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := backends(tc.counts...)
			occ, waiting := Occupy(State{}, cfg)
			grown, grow := Grow(occ, cfg, waiting, pol)
			if !grow {
				t.Fatal("an empty pool does not grow")
			}
			if got := freeSlots(grown); fmt.Sprint(got) != fmt.Sprint(tc.free) {
				t.Errorf("free spares by slots %v, want %v", got, tc.free)
			}
			if _, again := Grow(grown, cfg, nil, pol); again {
				t.Error("the grown pool grows again")
			}
		})
	}
	// Without Policy.Sized (a frontend per port) nothing changes: 4-slot
	// spares up to the target, no batch.
	cfg := backends(repeat(1000, 5)...)
	occ, waiting := Occupy(State{}, cfg)
	grown, _ := Grow(occ, cfg, waiting, Policy{Spares: 4, Other: 1, LowWater: 1})
	if got := freeSlots(grown); fmt.Sprint(got) != fmt.Sprint(map[int]int{0: 4}) {
		t.Errorf("not sized: free spares by slots %v, want 4 of 4 slots", got)
	}
}

// pass is one pass of a driver over the pool: OccupyFit against the
// slots HAProxy runs, then Grow; a growth is a reload, after which the
// running slots are those the grown pool renders.
type pass struct {
	pol     Policy
	pool    State
	running map[string]int
	growths int
}

// reload sizes every spare as a reload renders it: at least its
// declared slots, an occupant's servers with headroom.
func (p *pass) reload(cfg model.Config) {
	n := map[string]int{}
	for _, b := range cfg.Backends {
		n[b.Name] = len(b.Servers)
	}
	p.running = make(map[string]int, len(p.pool.Spares))
	for _, sp := range p.pool.Spares {
		s := max(sp.Slots, plan.MinSlots)
		if sp.Occupant != "" {
			s = max(s, plan.SlotsFor(n[sp.Occupant]))
		}
		p.running[sp.Name] = s
	}
}

func (p *pass) run(cfg model.Config) {
	next, waiting := OccupyFit(p.pool, cfg, func(name string) int { return p.running[name] })
	grown, grow := Grow(next, cfg, waiting, p.pol)
	p.pool = grown
	if grow {
		p.growths++
		p.reload(cfg)
	}
}

// TestNewServicesAtScale: 50 new Services of 5 servers, one at a time,
// each arriving with no servers and getting its 5 in the next pass,
// against a pool sized from 10,000 (or 500) Services of 5: never a move (each
// keeps the spare it took), never a wait, and at most ceil(50/batch)
// growths; then a burst of 100 finds a free spare each. Likewise from a
// pool.json written before class sizing (its free spares of 4 slots),
// which the first growth resizes.
func TestNewServicesAtScale(t *testing.T) {
	const add = 50
	pol := Policy{Spares: 16, Other: 1, LowWater: 1, Sized: true}
	for _, tc := range []struct {
		name    string
		have    int
		old     bool // the pool from before: free spares of 4 slots, one large
		growths int  // of the 50 (at most ceil(50/batch))
		burst   bool // a burst of 100 then finds a spare each
	}{
		{"sized pool, 10,000", 10000, false, 0, true},
		{"pool.json from before sizing, 10,000", 10000, true, 0, true},
		{"sized pool, 500: a growth within the run", 500, false, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have, b := tc.have, batch(pol, tc.have)
			bs := backends(repeat(have, 5)...).Backends
			cfg := model.Config{Backends: bs}
			p := &pass{pol: pol}
			if tc.old {
				var sb strings.Builder
				sb.WriteString(`{"classes":[{"balance":"roundrobin"}],"spares":[`)
				for i := range have + 2 {
					occ := ""
					if i < have {
						occ = fmt.Sprintf(`,"occupant":"s%05d"`, i)
					}
					slots := ""
					if i == have+1 {
						slots = `,"slots":16`
					}
					fmt.Fprintf(&sb, `%s{"name":"_pool_%d","class":0%s%s}`, map[bool]string{true: ",", false: ""}[i > 0], i, occ, slots)
				}
				sb.WriteString("]}")
				s, err := Decode(strings.NewReader(sb.String()))
				if err != nil {
					t.Fatalf("the old pool.json: %v", err)
				}
				p.pool = Restore(s, cfg)
				p.reload(cfg)
			}
			p.run(cfg) // the first pass (after a restart: below the low water, it grows and resizes)
			if p.growths != 1 {
				t.Fatalf("the first pass: %d growths, want 1", p.growths)
			}
			if got := freeSlots(p.pool); got[0] > 0 {
				t.Fatalf("free spares by slots after the first growth %v: some still of 4 slots", got)
			}
			p.growths = 0
			for i := range add {
				name := fmt.Sprintf("t%03d", i)
				for _, n := range []int{0, 5} {
					cfg = model.Config{Backends: append(bs[:len(bs):len(bs)], be(name, 0, servers(n)...))}
					before := p.pool.HAProxyBackend(name)
					p.run(cfg)
					after := p.pool.HAProxyBackend(name)
					if after == name {
						t.Fatalf("%s with %d servers waits for a spare", name, n)
					}
					if n > 0 && after != before {
						t.Fatalf("%s moved from %s to %s on getting its servers", name, before, after)
					}
					if n > 0 && p.running[after] < n {
						t.Fatalf("%s: %d servers in %s of %d slots", name, n, after, p.running[after])
					}
				}
				bs = cfg.Backends
			}
			// A burst of 100 in one pass: each takes a free spare,
			// none waits for the growth it starts.
			burst := slices.Clone(bs)
			for i := range 100 {
				burst = append(burst, be(fmt.Sprintf("u%03d", i), 0, servers(5)...))
			}
			if _, waiting := OccupyFit(p.pool, model.Config{Backends: burst}, func(name string) int { return p.running[name] }); tc.burst && len(waiting) > 0 {
				t.Errorf("a burst of 100: %d wait for a spare", len(waiting))
			}
			if limit := (add + b - 1) / b; p.growths > limit || p.growths != tc.growths {
				t.Errorf("%d growths for %d new Services, want %d, at most %d (batch %d)", p.growths, add, tc.growths, limit, b)
			}
			t.Logf("%d growths, batch %d", p.growths, b)
		})
	}
}

// TestBestFit: a new backend takes the free spare of its class that
// holds it with the fewest declared slots, the lowest numbered of those:
// a large spare numbered before the class-sized ones stays free.
func TestBestFit(t *testing.T) {
	cls := []model.Backend{classKey(be("", 0))}
	for _, tc := range []struct {
		name    string
		spares  []Spare
		servers int
		want    string
	}{
		{"no servers: the sized spare, not the large one before it", []Spare{{Name: "_pool_0", Slots: 16}, {Name: "_pool_1", Slots: 8}, {Name: "_pool_2", Slots: 8}}, 0, "_pool_1"},
		{"5 servers: the sized spare", []Spare{{Name: "_pool_0", Slots: 16}, {Name: "_pool_1", Slots: 8}}, 5, "_pool_1"},
		{"9 servers: only the large one holds them", []Spare{{Name: "_pool_0", Slots: 8}, {Name: "_pool_1", Slots: 16}}, 9, "_pool_1"},
		{"a 4-slot spare from before first, for a backend it holds", []Spare{{Name: "_pool_0", Slots: 8}, {Name: "_pool_1"}}, 2, "_pool_1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := State{Classes: cls, Spares: tc.spares}
			slots := func(name string) int {
				for _, sp := range s.Spares {
					if sp.Name == name {
						return max(sp.Slots, plan.MinSlots)
					}
				}
				return 0
			}
			next, waiting := OccupyFit(s, cfgOf(be("a", 0, servers(tc.servers)...)), slots)
			if got := next.HAProxyBackend("a"); len(waiting) > 0 || got != tc.want {
				t.Errorf("a in %s (waiting %v), want %s", got, waiting, tc.want)
			}
		})
	}
}

// TestGrowLeavesItsInput: Grow copies the spares only when the pool
// grows (a pass that does not grow reads them), and then never writes
// into the pool it was given: the driver keeps that pool as the one
// running until the growth's reload succeeds.
func TestGrowLeavesItsInput(t *testing.T) {
	cfg := backends(repeat(10, 5)...)
	occ, waiting := Occupy(State{}, cfg)
	pool, _ := Grow(occ, cfg, waiting, Policy{Spares: 4, Other: 1, LowWater: 1}) // free spares of 4 slots
	before := pool.Clone()
	sized := Policy{Spares: 4, Other: 1, LowWater: 1, Sized: true}
	grown, grow := Grow(pool, cfg, nil, sized) // resizes the free spares to 8 slots, adds a large one
	if !grow {
		t.Fatal("no growth to a sized pool")
	}
	if got := freeSlots(grown); got[8] == 0 {
		t.Fatalf("free spares by slots %v, want some of 8", got)
	}
	if !reflect.DeepEqual(pool, before) {
		t.Errorf("Grow wrote into its input:\n%+v\nwant\n%+v", pool.Spares, before.Spares)
	}
	if same, again := Grow(grown, cfg, nil, sized); again || !reflect.DeepEqual(same, grown) {
		t.Errorf("the grown pool changed again (grow %v)", again)
	}
}
