package plan

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// AssignChanged, with its Loose index kept up to date by Loose.Update,
// gives the slots AssignFrom gives, over random node flips, nodes joining
// (their servers land in loose slots) and servers coming and going; and
// the index stays what LooseOf computes from scratch.
func TestAssignChangedMatchesAssignFrom(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const nNodes, nBackends = 8, 10
	addr := func(n int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, byte(n + 1)}) }
	joined, down := 4, map[int]bool{}
	has := make([]map[int]bool, nBackends) // backend -> nodes it has a server on
	for b := range has {
		has[b] = map[int]bool{}
		for n := range joined {
			if rng.IntN(3) != 0 {
				has[b][n] = true
			}
		}
	}
	build := func() []*model.Backend {
		nb := model.Backend{Name: model.NodesBackend}
		for n := range joined {
			nb.Servers = append(nb.Servers, model.Server{Addr: addr(n), Maint: down[n]})
		}
		out := []*model.Backend{&nb}
		for b := range nBackends {
			be := model.Backend{Name: fmt.Sprint("be", b), Balance: "roundrobin", TrackNodes: b != 0, Servers: []model.Server{}}
			for n := range joined {
				if has[b][n] {
					be.Servers = append(be.Servers, model.Server{Addr: addr(n), Port: 80})
				}
			}
			out = append(out, &be)
		}
		return out
	}
	prev := model.Config{Backends: build()}
	layout, _ := Assign(prev, nil, true)
	loose := LooseOf(prev, layout)
	fast, sawLoose := 0, false
	for step := range 400 {
		switch r := rng.IntN(10); {
		case r < 4:
			n := rng.IntN(joined)
			down[n] = !down[n]
		case r < 5 && joined < nNodes:
			for b := range has {
				if rng.IntN(2) == 0 {
					has[b][joined] = true
				}
			}
			joined++
		default:
			b, n := rng.IntN(nBackends), rng.IntN(joined)
			has[b][n] = !has[b][n]
		}
		next := model.Config{Backends: build()}
		var idx []int
		for i := range next.Backends {
			if !reflect.DeepEqual(next.Backends[i].Servers, prev.Backends[i].Servers) {
				idx = append(idx, i)
			} else {
				next.Backends[i] = prev.Backends[i] // shared, as the desired package does
			}
		}
		next.Changes = &model.Changes{Base: prev.Backends, Backends: idx}
		want, exhausted := AssignFrom(next, prev, layout, false)
		changed, ok := AssignChanged(next, prev, layout, loose)
		if ok != (len(exhausted) == 0) {
			t.Fatalf("step %d: AssignChanged ok %v, AssignFrom exhausted %v", step, ok, exhausted)
		}
		if ok {
			fast++
			merged := maps.Clone(layout)
			maps.Copy(merged, changed)
			for _, be := range next.Backends {
				if !reflect.DeepEqual(merged[be.Name], want[be.Name]) {
					t.Fatalf("step %d: %s: %v, want %v", step, be.Name, slotsOf(merged[be.Name]), slotsOf(want[be.Name]))
				}
			}
			loose.Update(next, changed)
			layout = merged
		} else { // the driver reloads: every used slot bound again
			layout, _ = Assign(next, layout, true)
			loose = LooseOf(next, layout)
		}
		if fresh := LooseOf(next, layout); !maps.Equal(loose, fresh) {
			t.Fatalf("step %d: loose %v, want %v", step, slices.Sorted(maps.Keys(loose)), slices.Sorted(maps.Keys(fresh)))
		}
		sawLoose = sawLoose || len(loose) > 0
		next.Changes = nil
		prev = next
	}
	if fast < 200 || !sawLoose {
		t.Fatalf("%d of 400 steps took AssignChanged, loose slots seen: %v", fast, sawLoose)
	}
}
