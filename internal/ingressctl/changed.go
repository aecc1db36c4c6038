package ingressctl

import (
	"net/netip"
	"reflect"
	"slices"

	netv1 "k8s.io/api/networking/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
)

// maxDirty bounds the keys remembered between two enqueues; past it, the
// next enqueue looks at every cached Ingress (as cheap per Ingress).
const maxDirty = 4096

// Changed tells the status writers that obj (the informer cache's
// object) was updated in a way no pass reads: when it is an Ingress (its
// status written, by us or another controller), the next enqueue
// compares it again, and Changed reports true; any other object is not
// the Ingresses' (false). It never blocks.
func (s *Server) Changed(obj any) bool {
	ing, ok := obj.(*netv1.Ingress)
	if !ok {
		return false
	}
	s.mu.Lock()
	s.markLocked(ingress.Key{Namespace: ing.Namespace, Name: ing.Name})
	s.mu.Unlock()
	s.wake.Poke()
	return true
}

// markLocked remembers k for the next enqueue (s.mu held).
func (s *Server) markLocked(k ingress.Key) {
	switch {
	case s.full:
	case len(s.dirty) >= maxDirty:
		s.full, s.dirty = true, nil
	default:
		if s.dirty == nil {
			s.dirty = map[ingress.Key]struct{}{}
		}
		s.dirty[k] = struct{}{}
	}
}

// applyLocked makes s.applied say what served does, in place, and
// remembers each key whose entry changed (served anew, no longer served,
// other addresses); it reports whether any did (s.mu held). A Result's
// Served is never modified (ingress.Result): the map of the last call
// again is the same, and costs no walk.
func (s *Server) applyLocked(served map[ingress.Key][]netip.Addr) bool {
	if s.applied != nil && s.from != nil && reflect.ValueOf(served).UnsafePointer() == s.from {
		return false
	}
	s.from = reflect.ValueOf(served).UnsafePointer()
	changed := s.applied == nil // the first: nothing written yet
	if changed {
		s.applied = make(map[ingress.Key][]string, len(served))
	}
	var text addrText
	for k, addrs := range served {
		ips := text.of(addrs)
		if was, ok := s.applied[k]; !ok || !slices.Equal(was, ips) {
			s.applied[k] = ips
			s.markLocked(k)
			changed = true
		}
	}
	if len(s.applied) != len(served) { // some no longer served
		for k := range s.applied {
			if _, ok := served[k]; !ok {
				delete(s.applied, k)
				s.markLocked(k)
				changed = true
			}
		}
	}
	return changed
}

// take returns the keys remembered since the last enqueue and whether
// every Ingress must be looked at, and starts afresh.
func (s *Server) take() (dirty map[ingress.Key]struct{}, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dirty, full = s.dirty, s.full
	s.dirty, s.full = nil, false
	return dirty, full
}

// enqueue queues the Ingresses whose status differs from what it should
// say: of those remembered since the last enqueue (their entry in what
// runs changed, or their status did), or of every cached one when told
// to (a new leader, too many remembered).
func (s *Server) enqueue(q workqueue.TypedRateLimitingInterface[ingress.Key]) {
	dirty, full := s.take()
	ours := s.ours()
	if full {
		_, ings := s.src.Ingresses()
		for _, ing := range ings {
			s.looked++
			if _, differs := s.want(ing, ours); differs {
				q.Add(ingress.Key{Namespace: ing.Namespace, Name: ing.Name})
			}
		}
		return
	}
	for k := range dirty {
		ing, ok := s.src.IngressObject(k.Namespace, k.Name)
		if !ok {
			continue // gone: nothing to write
		}
		s.looked++
		if _, differs := s.want(ing, ours); differs {
			q.Add(k)
		}
	}
}

// lookAtEverything makes the next enqueue look at every cached Ingress.
func (s *Server) lookAtEverything() {
	s.mu.Lock()
	s.full, s.dirty = true, nil
	s.mu.Unlock()
}
