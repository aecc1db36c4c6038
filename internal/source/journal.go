package source

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

// maxJournal bounds the HTTPRoutes a journal names between two takes;
// past it the next take tells every route (a walk is as cheap then).
const maxJournal = 4096

// journal names the HTTPRoutes a live list's events changed since the
// last take, each with its object now (nil: deleted), for a gateway
// pass (gateway.Input.HTTPRouteChanges, issue 30). It is kept under the
// live list's lock, so a take and the list copied with it are one
// snapshot: the span's objects are the list's. Its places count the
// takes: a span is (from, at].
type journal struct {
	at, from uint64
	taken    bool // the first take tells every route
	full     bool // past maxJournal, or the list broken: every route
	keys     []gateway.Key
	objs     []*gwv1.HTTPRoute
	idx      map[gateway.Key]int // each key's place in keys
}

// note notes obj's key with its object now (nil: deleted).
func (j *journal) note(obj any, now *gwv1.HTTPRoute) {
	m, ok := obj.(metav1.Object)
	if !ok {
		j.full = true
		return
	}
	if j.full {
		return
	}
	k := gateway.Key{Namespace: m.GetNamespace(), Name: m.GetName()}
	if i, ok := j.idx[k]; ok {
		j.objs[i] = now
		return
	}
	if len(j.keys) >= maxJournal {
		j.full, j.keys, j.objs, j.idx = true, nil, nil, nil
		return
	}
	if j.idx == nil {
		j.idx = map[gateway.Key]int{}
	}
	j.idx[k] = len(j.keys)
	j.keys, j.objs = append(j.keys, k), append(j.objs, now)
}

// take is the span since the last take, and starts the next.
func (j *journal) take() *gateway.ChangedRoutes {
	j.at++
	c := &gateway.ChangedRoutes{From: j.from, To: j.at, All: j.full || !j.taken, Keys: j.keys, Objs: j.objs}
	if c.All {
		c.Keys, c.Objs = nil, nil
	}
	j.from, j.taken, j.full, j.keys, j.objs, j.idx = j.at, true, false, nil, nil, nil
	return c
}

// journaled makes l keep a journal of its events (before the informer
// starts).
func journaled(l *live[*gwv1.HTTPRoute]) *live[*gwv1.HTTPRoute] {
	l.journal = &journal{}
	return l
}

// intoTold is into with the journal's span taken under the same lock:
// the span's objects are the list's. Broken: every route (the store's
// list is the caller's).
func (l *live[T]) intoTold(buf []T) ([]T, *gateway.ChangedRoutes, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken || l.journal == nil {
		return buf, &gateway.ChangedRoutes{All: true}, false
	}
	return l.copyInto(buf), l.journal.take(), true
}
