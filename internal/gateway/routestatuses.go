package gateway

import (
	"hash/maphash"
	"iter"
	"maps"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// The routes' statuses of a result kept from pass to pass (issue 30): a
// pass used to build a map of every route's entry (0.63 MB at 5,000
// routes, and a map assignment per route). RouteStatuses is persistent
// instead: its entries are spread over shards by key, and a pass starts
// from the last result's and copies only the shards holding a route
// whose entry it changes (a pass that changes one route: one shard of
// a few dozen entries and the array of shards). A result, once made,
// never changes: the status publisher reads the results of earlier
// passes while later ones are computed.

// routeShards is the number of shards: at 5,000 routes ~40 entries each.
const routeShards = 128

// RouteStatuses are the parents' statuses this controller writes, by
// route (Result.Routes). Every entry has at least one parent. The zero
// value is empty. Read only through its methods; it never changes.
type RouteStatuses struct {
	sh *[routeShards]map[RouteKey][]gwv1.RouteParentStatus // nil when empty; an empty shard is nil
	n  int
}

var routeSeed = maphash.MakeSeed()

func shardOf(k RouteKey) int {
	return int((maphash.String(routeSeed, k.Name) + 31*maphash.String(routeSeed, k.Namespace)) % routeShards)
}

// Get is route k's entry; nil: none.
func (s RouteStatuses) Get(k RouteKey) []gwv1.RouteParentStatus {
	sts, _ := s.Lookup(k)
	return sts
}

// Lookup is route k's entry and whether it has one.
func (s RouteStatuses) Lookup(k RouteKey) ([]gwv1.RouteParentStatus, bool) {
	if s.sh == nil {
		return nil, false
	}
	sts, ok := s.sh[shardOf(k)][k]
	return sts, ok
}

// Len is the number of routes with an entry.
func (s RouteStatuses) Len() int { return s.n }

// All yields every entry, in no order.
func (s RouteStatuses) All() iter.Seq2[RouteKey, []gwv1.RouteParentStatus] {
	return func(yield func(RouteKey, []gwv1.RouteParentStatus) bool) {
		if s.sh == nil {
			return
		}
		for _, m := range s.sh {
			for k, v := range m {
				if !yield(k, v) {
					return
				}
			}
		}
	}
}

// Map is every entry in a map of its own.
func (s RouteStatuses) Map() map[RouteKey][]gwv1.RouteParentStatus {
	return maps.Collect(s.All())
}

// RouteStatusesOf holds m's entries (those with a parent).
func RouteStatusesOf(m map[RouteKey][]gwv1.RouteParentStatus) RouteStatuses {
	var b routeStatusBuild
	for k, v := range m {
		b.put(k, v)
	}
	return b.done()
}

// With is s with route k's entry sts (none when sts is empty); s is
// unchanged.
func (s RouteStatuses) With(k RouteKey, sts []gwv1.RouteParentStatus) RouteStatuses {
	b := routeStatusBuild{s: s}
	b.put(k, sts)
	return b.done()
}

// routeStatusBuild makes a RouteStatuses from an earlier one, copying
// the array of shards and each shard the first time it changes.
type routeStatusBuild struct {
	s   RouteStatuses
	arr bool                     // s.sh is this build's own
	own [routeShards / 64]uint64 // the shards that are this build's own
}

// put sets route k's entry to sts, or removes it when sts is empty.
func (b *routeStatusBuild) put(k RouteKey, sts []gwv1.RouteParentStatus) {
	i := shardOf(k)
	if len(sts) == 0 {
		if _, ok := b.s.Lookup(k); !ok {
			return
		}
		m := b.shard(i)
		delete(m, k)
		b.s.n--
		if len(m) == 0 {
			b.s.sh[i] = nil // as a build that never had it leaves it
		}
		return
	}
	m := b.shard(i)
	if _, ok := m[k]; !ok {
		b.s.n++
	}
	m[k] = sts
}

// shard is shard i, made this build's own.
func (b *routeStatusBuild) shard(i int) map[RouteKey][]gwv1.RouteParentStatus {
	if !b.arr {
		sh := new([routeShards]map[RouteKey][]gwv1.RouteParentStatus)
		if b.s.sh != nil {
			*sh = *b.s.sh
		}
		b.s.sh, b.arr = sh, true
	}
	if b.own[i/64]&(1<<(i%64)) == 0 || b.s.sh[i] == nil {
		b.own[i/64] |= 1 << (i % 64)
		m := make(map[RouteKey][]gwv1.RouteParentStatus, len(b.s.sh[i])+1)
		maps.Copy(m, b.s.sh[i])
		b.s.sh[i] = m
	}
	return b.s.sh[i]
}

// done is what was built; b is not to be used again.
func (b *routeStatusBuild) done() RouteStatuses {
	if b.s.n == 0 {
		return RouteStatuses{}
	}
	return b.s
}
