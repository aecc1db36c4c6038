package spares

import (
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// Spares sized to their class. A free spare has the slots of a backend
// with no servers (plan.MinSlots), so a new backend with more servers, or
// one whose servers outgrow its spare, would need a reload (its slots
// exhausted). Every class in use therefore also keeps one free large
// spare (Spare.Slots, rendered with at least that many slots:
// model.Backend.Slots), sized in steps of four times (16, 64, 256) to
// hold the largest backend of its class: a backend that does not fit
// the spare it has or would take moves into it with one map change
// (OccupyFit), and the pool grows another ahead of need. The steps keep
// endpoint churn from resizing it: only a backend crossing into the next
// step wants a new one.

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

// largeWanted is, per class in use, the slots of the large spare it
// lacks (0: it has a free one that large).
func (s State) largeWanted(cfg model.Config, cls []int, use map[int]int) map[int]int {
	most := make(map[int]int, len(use))
	for j, b := range cfg.Backends {
		if pooled(b) {
			if c := cls[j]; c >= 0 {
				most[c] = max(most[c], len(b.Servers))
			}
		}
	}
	out := make(map[int]int, len(use))
	for c := range use {
		want := largeFor(most[c])
		has := false
		for _, sp := range s.Spares {
			if sp.Class == c && sp.Occupant == "" && sp.Slots >= want {
				has = true
				break
			}
		}
		if !has {
			out[c] = want
		}
	}
	return out
}
