package source

import (
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
)

func jroute(name, rv string) *gwv1.HTTPRoute {
	return &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, ResourceVersion: rv}}
}

// TestJournalSpans: each take of the HTTPRoutes' list tells the keys its
// events changed since the last take, each once with its object in the
// list taken with it (nil: deleted), as the span after the last one;
// the first take, an overflow and a broken list tell every route.
func TestJournalSpans(t *testing.T) {
	r1, r1b, r2 := jroute("r1", "1"), jroute("r1", "2"), jroute("r2", "1")
	many := func(l *live[*gwv1.HTTPRoute]) {
		for i := range maxJournal + 1 {
			l.add(jroute("m"+strconv.Itoa(i), "1"))
		}
	}
	for _, c := range []struct {
		name   string
		events func(l *live[*gwv1.HTTPRoute])
		all    bool
		keys   []string
		objs   []*gwv1.HTTPRoute
	}{
		{name: "nothing", events: func(*live[*gwv1.HTTPRoute]) {}},
		{name: "added", events: func(l *live[*gwv1.HTTPRoute]) { l.add(r2) }, keys: []string{"r2"}, objs: []*gwv1.HTTPRoute{r2}},
		{name: "updated twice: once, its last object", events: func(l *live[*gwv1.HTTPRoute]) {
			l.update(r1, r1b)
			r1c := jroute("r1", "3")
			l.update(r1b, r1c)
		}, keys: []string{"r1"}},
		{name: "deleted", events: func(l *live[*gwv1.HTTPRoute]) { l.del(r1) }, keys: []string{"r1"}, objs: []*gwv1.HTTPRoute{nil}},
		{name: "a tombstone", events: func(l *live[*gwv1.HTTPRoute]) { l.del(cache.DeletedFinalStateUnknown{Key: "a/r1", Obj: r1}) },
			keys: []string{"r1"}, objs: []*gwv1.HTTPRoute{nil}},
		{name: "added then deleted", events: func(l *live[*gwv1.HTTPRoute]) { l.add(r2); l.del(r2) },
			keys: []string{"r2"}, objs: []*gwv1.HTTPRoute{nil}},
		{name: "too many", events: many, all: true},
		{name: "broken", events: func(l *live[*gwv1.HTTPRoute]) { l.add(r1) }, all: true}, // r1 twice
	} {
		t.Run(c.name, func(t *testing.T) {
			l := journaled(&live[*gwv1.HTTPRoute]{at: map[*gwv1.HTTPRoute]int{}})
			l.add(r1)
			_, first, ok := l.intoTold(nil)
			if !ok || !first.All {
				t.Fatalf("the first take: ok %v all %v, want every route", ok, first.All)
			}
			c.events(l)
			list, got, _ := l.intoTold(nil)
			if got.All != c.all || (!c.all && (got.From != first.To || got.To <= got.From)) {
				t.Fatalf("span (%d, %d] all %v, want all %v from %d", got.From, got.To, got.All, c.all, first.To)
			}
			if c.all {
				return
			}
			in := map[gateway.Key]*gwv1.HTTPRoute{}
			for _, h := range list {
				in[gateway.Key{Namespace: h.Namespace, Name: h.Name}] = h
			}
			if len(got.Keys) != len(c.keys) || len(got.Objs) != len(got.Keys) {
				t.Fatalf("keys %v objs %d, want %v", got.Keys, len(got.Objs), c.keys)
			}
			for i, k := range got.Keys {
				if k.Name != c.keys[i] || got.Objs[i] != in[k] {
					t.Fatalf("key %v object %p, want %s with the list's %p", k, got.Objs[i], c.keys[i], in[k])
				}
				if c.objs != nil && got.Objs[i] != c.objs[i] {
					t.Fatalf("key %v object %p, want %p", k, got.Objs[i], c.objs[i])
				}
			}
			if _, again, _ := l.intoTold(nil); again.All || len(again.Keys) != 0 || again.From != got.To {
				t.Fatalf("a take with no events: span (%d, %d] all %v keys %v, want none after %d", again.From, again.To, again.All, again.Keys, got.To)
			}
		})
	}
}
