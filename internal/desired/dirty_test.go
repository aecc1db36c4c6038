package desired

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// TestMemoKeepsNoLargeDirtySet: the sets of Services a pass marks dirty
// are emptied after it, and one that held many is dropped rather than
// kept empty at its size (the first pass marks every Service: ~1.5 MB
// at 10,000 kept for good, issue 29); a small one is kept for reuse.
func TestMemoKeepsNoLargeDirtySet(t *testing.T) {
	const n = 2 * maxKeptDirty
	in := bigInput(n, func(i int) []ep {
		return []ep{{ip: fmt.Sprintf("192.168.%d.%d", i/250, i%250), node: fmt.Sprint("n", i%20), ready: true, serving: true}}
	})
	memo := new(Memo)
	in.Memo = memo
	// newSlices replaces the first k slices by new objects: their
	// Services' servers are dirty in the next pass.
	newSlices := func(k int) {
		in.Slices = slices.Clone(in.Slices)
		for i := range k {
			c := *in.Slices[i]
			in.Slices[i] = &c
		}
	}
	for _, step := range []struct {
		name     string
		change   func()
		wantKept bool // the set's map kept (emptied) for the next pass
	}{
		{"the first pass: every Service new", func() {}, false},
		{"nothing changed: no set made", func() {}, false},
		{"every slice new", func() { newSlices(n) }, false},
		{"a few slices new", func() { newSlices(3) }, true},
		{"many slices new", func() { newSlices(maxKeptDirty + 1) }, false},
	} {
		step.change()
		r := Compute(in, defaults())
		if len(r.Config.Backends) != n {
			t.Fatalf("%s: %d backends, want %d", step.name, len(r.Config.Backends), n)
		}
		if len(memo.dirtyKeys) != 0 || len(memo.dirtySvcs) != 0 {
			t.Fatalf("%s: dirty sets not emptied after the pass: %d keys, %d Services", step.name, len(memo.dirtyKeys), len(memo.dirtySvcs))
		}
		if kept := memo.dirtyKeys != nil; kept != step.wantKept {
			t.Errorf("%s: the dirty keys' map kept %v, want %v", step.name, kept, step.wantKept)
		}
		if memo.dirtySvcs != nil && !step.wantKept {
			t.Errorf("%s: the dirty Services' map kept after a pass that marked many", step.name)
		}
	}
}

// TestMemoSharesEqualSettings: the memo's entries of Services with equal
// settings hold one object (not a copy each: ~1.3 MB at 10,000, issue
// 29), and a Service with other settings its own, with its values.
func TestMemoSharesEqualSettings(t *testing.T) {
	in := bigInput(4, func(i int) []ep {
		return []ep{{ip: fmt.Sprintf("192.168.0.%d", i+1), node: "n1", ready: true, serving: true}}
	})
	odd := in.Services[2]
	odd.Annotations = map[string]string{settings.Prefix + "balance": "leastconn"}
	memo := new(Memo)
	in.Memo = memo
	for pass := range 2 {
		if r := Compute(in, defaults()); len(r.Config.Backends) != 4 || len(r.Problems) != 0 {
			t.Fatalf("pass %d: %d backends, problems %v", pass, len(r.Config.Backends), r.Problems)
		}
		sets := map[*settings.Settings]int{}
		for _, s := range in.Services {
			e := memo.entries[s]
			if e == nil || e.set == nil {
				t.Fatalf("pass %d: %s has no settings in the memo", pass, s.Name)
			}
			sets[e.set]++
		}
		if len(sets) != 2 || sets[memo.entries[odd].set] != 1 {
			t.Errorf("pass %d: %d settings objects for 4 Services of two kinds (%v), want 2: the three alike sharing one", pass, len(sets), sets)
		}
		if got := memo.entries[odd].set.Balance; got != "leastconn" {
			t.Errorf("pass %d: the odd Service's balance %q, want leastconn", pass, got)
		}
		if got := memo.entries[in.Services[0]].set.Balance; got != "roundrobin" {
			t.Errorf("pass %d: a default Service's balance %q, want roundrobin", pass, got)
		}
	}
}

// TestMemoFrontendsInTheResult: the memo holds each port's frontend in
// the Result's own Frontends array, not a copy of its own (a second copy
// of every frontend, ~1.7 MB at 10,000, issue 29), after a first pass and
// a pass with the same Services. A new Service is a delta pass
// (delta.go), which splices a new array and moves every port into it,
// the new Service's too (repoint): no port keeps the last whole pass's
// array alive beside the Result's (1.7 MB at 10,000, issue 29's peak).
func TestMemoFrontendsInTheResult(t *testing.T) {
	in := bigInput(6, func(i int) []ep {
		return []ep{{ip: fmt.Sprintf("192.168.0.%d", i+1), node: "n1", ready: true, serving: true}}
	})
	last := in.Services[5]
	in.Services = in.Services[:5]
	memo := new(Memo)
	in.Memo = memo
	var whole []model.Frontend // the last whole pass's array
	for _, step := range []string{"first pass", "the same Services", "a new Service"} {
		if step == "a new Service" {
			in.Services = append(in.Services, last)
		}
		deltas := memo.deltas
		r := Compute(in, defaults())
		if memo.deltas > deltas {
			if step != "a new Service" {
				t.Fatalf("%s: a delta pass", step)
			}
			for _, s := range in.Services {
				fe := memo.entries[s].ports[0].fe
				i := slices.IndexFunc(r.Config.Frontends, func(f model.Frontend) bool { return f.Name == fe.Name })
				if i < 0 || !reflect.DeepEqual(*fe, r.Config.Frontends[i]) {
					t.Errorf("%s: %s's memoised frontend differs from the Result's", step, s.Name)
				}
				if !pointsInto(fe, r.Config.Frontends) || pointsInto(fe, whole) {
					t.Errorf("%s: %s's memoised frontend is not in the Result's array (in the whole pass's: %v)", step, s.Name, pointsInto(fe, whole))
				}
			}
			continue
		}
		if step == "a new Service" {
			t.Fatalf("%s: not a delta pass", step)
		}
		whole = r.Config.Frontends
		if len(r.Config.Frontends) != len(in.Services) {
			t.Fatalf("%s: %d frontends, want %d", step, len(r.Config.Frontends), len(in.Services))
		}
		for _, s := range in.Services {
			e := memo.entries[s]
			if e == nil || len(e.ports) == 0 || !e.ports[0].haveProxies {
				t.Fatalf("%s: %s has no memoised proxies", step, s.Name)
			}
			in := false
			for i := range r.Config.Frontends {
				in = in || e.ports[0].fe == &r.Config.Frontends[i]
			}
			if !in {
				t.Errorf("%s: %s's memoised frontend %q is a copy, not the Result's", step, s.Name, e.ports[0].fe.Name)
			}
		}
	}
}

// pointsInto reports whether fe is the address of one of fes's elements.
func pointsInto(fe *model.Frontend, fes []model.Frontend) bool {
	for i := range fes {
		if fe == &fes[i] {
			return true
		}
	}
	return false
}
