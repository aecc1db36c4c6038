package spares

import (
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// Spares sized to their class. A class's free spares are sized to the
// backends it has (classSlots; plan.MinSlots, 4, when most have 2
// servers or fewer), so a new backend of the usual size, or one that
// arrives with no servers and then gets them, fits the spare it takes.
// Every class in use also keeps a free large spare (Spare.Slots,
// rendered with at least that many slots: model.Backend.Slots), sized
// in steps of four times (16, 64, 256) to hold the largest backend of
// its class: a backend that does not fit the spare it has or would take
// moves into it with one map change (OccupyFit), and the pool grows
// more ahead of need. The steps keep endpoint churn from resizing it:
// only a backend crossing into the next step wants a new one.

// LargeSlots is the smallest large spare, and MaxLargeSlots the largest:
// a backend with more servers than that is sized by a reload, as without
// a pool.
const (
	LargeSlots    = 4 * plan.MinSlots
	MaxLargeSlots = 256
)

// largeFor is the size of the large spare of a class whose largest
// backend has most servers.
func largeFor(most int) int {
	s := LargeSlots
	for s < plan.SlotsFor(most) && s < MaxLargeSlots {
		s *= 4
	}
	return s
}

// Sized classes (issue 29): at 10,000 Services the usual backend has more
// servers than a 4-slot spare holds (5 endpoints: 8 slots), so each new
// Service moved into the class's one free large spare and the pool grew
// one more: a reload per new Service. Behind the fixed listener
// (Policy.Sized) a class's free spares are therefore sized to the
// backends it has (classSlots), and the pool grows in batches (fill,
// largeBatch), so that the next growth is many new Services away.
const (
	// ClassQuantile: a class's free spares hold this share (percent)
	// of its backends' servers; the rest take the large spare.
	ClassQuantile = 90
	// MaxClassSlots bounds a class's free spares: a class whose usual
	// backend has more servers keeps spares this large (its large
	// spare holds the rest, or a reload sizes them).
	MaxClassSlots = LargeSlots
	// BatchShare: a class's batch is one free spare per BatchShare
	// backends of the class, at most MaxBatch (HAProxy's memory per
	// spare: docs/backend-pool.md). A growth brings the class to its
	// target plus two batches, and comes when less than one is free.
	BatchShare = 16
	MaxBatch   = 128
	// LargeShare: a growth that adds large spares adds one per
	// LargeShare backends of the class, at least one, at most MaxLarge.
	LargeShare = 1024
	MaxLarge   = 8
)

// classSlots is the slots of a class's free spares, given the count of
// its backends by sized slots (hist, index plan.SlotsFor/4 bounded by
// MaxClassSlots/4): the slots of the ClassQuantile'th backend, 0 (the
// default, plan.MinSlots) when that is no more.
func classSlots(hist *[MaxClassSlots/4 + 1]int) int {
	n := 0
	for _, k := range hist {
		n += k
	}
	seen := 0
	for i, k := range hist {
		if seen += k; seen*100 >= n*ClassQuantile && k > 0 {
			if i*4 <= plan.MinSlots {
				return 0
			}
			return i * 4
		}
	}
	return 0
}

// batch is the batch of a class with n backends (Policy.Sized; 0
// otherwise).
func batch(pol Policy, n int) int {
	if !pol.Sized {
		return 0
	}
	return min(n/BatchShare, MaxBatch)
}

// fill is the free spares a class with the given target and n backends
// has after a growth.
func fill(pol Policy, target, n int) int { return target + 2*batch(pol, n) }

// lowWater: a class with fewer free spares than this makes the pool
// grow: Policy.LowWater (at most the target), or with Policy.Sized a
// batch, so that a growth comes while a batch is still free (a burst of
// new Services that size takes spares during the growth's reload), and
// the next one a batch and the target of new Services later.
func lowWater(pol Policy, target, n int) int {
	return max(min(pol.LowWater, target), batch(pol, n))
}

// largeBatch is how many large spares a growth adds to a class with n
// backends that lacks a free one.
func largeBatch(pol Policy, n int) int {
	if !pol.Sized {
		return 1
	}
	return max(1, min(n/LargeShare, MaxLarge))
}

// bestFree is the free spare of class c (c < 0: none) for which ok
// holds with the fewest declared slots (Spare.Slots), the lowest
// numbered of those: a new backend takes a spare of its class's size
// before a large one; -1 when none.
func bestFree(sps []Spare, c int, ok func(i int) bool) int {
	best := -1
	if c < 0 {
		return best
	}
	for i := range sps {
		sp := &sps[i]
		if sp.Class != c || sp.Occupant != "" || !ok(i) {
			continue
		}
		if best < 0 || sp.Slots < sps[best].Slots {
			best = i
		}
		if sp.Slots == 0 {
			break // none declares fewer
		}
	}
	return best
}

// resizeFree gives every free spare declaring fewer slots than its
// class's size (size, by class) that size: the growth's reload renders
// it again anyway. A spare from before sizing (4 slots) thus serves the
// class's usual backend after the next growth.
func (s *State) resizeFree(size map[int]int) {
	if len(size) == 0 {
		return
	}
	for i := range s.Spares {
		sp := &s.Spares[i]
		if want := size[sp.Class]; sp.Occupant == "" && sp.Slots < want {
			sp.Slots = want
		}
	}
}

// sizing is, per class in use, the slots of the large spare it lacks
// (large; absent: it has a free one that large) and the slots of its
// free spares (size; absent: plan.MinSlots).
func (s State) sizing(cfg model.Config, cls []int, use map[int]int) (large, size map[int]int) {
	// By class index (a few classes), not a map lookup per backend.
	most := make([]int, len(s.Classes))
	hist := make([]*[MaxClassSlots/4 + 1]int, len(s.Classes))
	for j, b := range cfg.Backends {
		if pooled(b) {
			if c := cls[j]; c >= 0 && c < len(most) {
				n := len(b.Servers)
				most[c] = max(most[c], n)
				h := hist[c]
				if h == nil {
					h = new([MaxClassSlots/4 + 1]int)
					hist[c] = h
				}
				h[min(plan.SlotsFor(n), MaxClassSlots)/4]++
			}
		}
	}
	large = make(map[int]int, len(use))
	size = make(map[int]int, len(use))
	for c := range use {
		if h := hist[c]; h != nil {
			if n := classSlots(h); n > 0 {
				size[c] = n
			}
		}
		want := largeFor(most[c])
		has := false
		// From the last: the free large spares are the ones a growth
		// added last, not found after a walk of 10,000 taken ones.
		for i := len(s.Spares) - 1; i >= 0; i-- {
			if sp := &s.Spares[i]; sp.Class == c && sp.Occupant == "" && sp.Slots >= want {
				has = true
				break
			}
		}
		if !has {
			large[c] = want
		}
	}
	return large, size
}
