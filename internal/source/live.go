package source

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// live keeps one informer's objects as a slice, changed by the informer's
// events, for Snapshot: listing the store walked its map of every object
// into a new slice on each pass, O(objects) (~0.3 ms a list at 10,000
// Services, three lists a pass; issue 29), where copying the slice under
// a lock is a memmove. It is the informer's listener of its own and runs
// the source's handlers for that informer after its change, so the pass
// a handler asks for sees the change (handlers on listeners of their own
// could run first). An event that does not match what it holds (which the
// informer's contract rules out) breaks it for good: Snapshot then lists
// the store, as before.
type live[T comparable] struct {
	mu     sync.Mutex
	items  []T
	at     map[T]int // each object's place in items
	broken bool

	handlers []handler // the source's, added before the informer starts
	reg      cache.ResourceEventHandlerRegistration
	// journal, when not nil, names the objects changed (journal.go).
	journal *journal
}

// noted notes obj in the journal, if any, with its object now (nil:
// deleted). Under l.mu.
func (l *live[T]) noted(obj any, now any) {
	if l.journal == nil {
		return
	}
	h, _ := now.(*gwv1.HTTPRoute)
	l.journal.note(obj, h)
}

func newLive[T comparable](inf cache.SharedIndexInformer) *live[T] {
	l := &live[T]{at: make(map[T]int)}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: l.add, UpdateFunc: l.update, DeleteFunc: l.del})
	if err != nil { // a stopped informer: cannot be, it is not started yet
		l.broken = true
	}
	l.reg = reg
	return l
}

// synced reports whether every object of the informer's first list came
// through (the informer's own HasSynced only says its store has them).
func (l *live[T]) synced() bool { return l.broken || l.reg.HasSynced() }

func (l *live[T]) add(obj any) {
	t, ok := obj.(T)
	l.mu.Lock()
	if _, dup := l.at[t]; !ok || dup {
		l.broken = true
	} else {
		l.at[t] = len(l.items)
		l.items = append(l.items, t)
		l.noted(obj, obj)
	}
	l.mu.Unlock()
	for _, h := range l.handlers {
		h.change()
	}
}

func (l *live[T]) update(old, new any) {
	o, ok1 := old.(T)
	n, ok2 := new.(T)
	l.mu.Lock()
	if i, ok := l.at[o]; !ok || !ok1 || !ok2 {
		l.broken = true
	} else {
		delete(l.at, o)
		l.at[n], l.items[i] = i, n
		l.noted(new, new)
	}
	l.mu.Unlock()
	for _, h := range l.handlers {
		h.updated(old, new)
	}
}

func (l *live[T]) del(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj // the object the store held
	}
	t, ok := obj.(T)
	l.mu.Lock()
	i, found := l.at[t]
	if ok && !found {
		i, found = l.find(obj)
	}
	if !ok || !found {
		l.broken = true
	} else {
		t = l.items[i]
		last := len(l.items) - 1
		l.items[i] = l.items[last]
		l.at[l.items[i]] = i
		var zero T
		l.items[last], l.items = zero, l.items[:last]
		delete(l.at, t)
		l.noted(obj, nil)
	}
	l.mu.Unlock()
	for _, h := range l.handlers {
		h.change()
	}
}

// find is the place of the object named as obj: a delete from a watch
// hands the object's last state, not the one the store held (a
// tombstone's is). O(objects), for deletes alone.
func (l *live[T]) find(obj any) (int, bool) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return 0, false
	}
	ns, name := m.GetNamespace(), m.GetName()
	for i, t := range l.items {
		if o, ok := any(t).(metav1.Object); ok && o.GetName() == name && o.GetNamespace() == ns {
			return i, true
		}
	}
	return 0, false
}

// into copies the objects into buf, reusing its storage (the tail left
// from a longer list cleared); ok is false when l is broken (buf as it
// was).
func (l *live[T]) into(buf []T) ([]T, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken {
		return buf, false
	}
	return l.copyInto(buf), true
}

// copyInto copies the objects into buf, reusing its storage. Under l.mu.
func (l *live[T]) copyInto(buf []T) []T {
	old := len(buf)
	buf = append(buf[:0], l.items...)
	if len(buf) < old {
		clear(buf[len(buf):old])
	}
	return buf
}
