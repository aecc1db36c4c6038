package gateway

import (
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A route's fragments: its rules compiled for each HTTP frontend it is
// attached to, kept on its memo entry (memo.go) while its inputs are the
// same.

// fragAt is a route's fragment for a frontend and the route's server
// names there.
type fragAt struct {
	k    fragKey
	snis []string
	f    *fragment
}

// fragKey is where a route's rules are compiled: an HTTP frontend's port
// and scheme, and the Gateway (with the host names the route takes
// there: fragAt).
type fragKey struct {
	port   uint16
	scheme string
	gw     Key
}

// fragment is one route's rules compiled for one HTTP frontend: its
// actions (their places relative to the route's first), its matches
// (Action relative too) and the backends they use.
type fragment struct {
	actions  []model.HTTPAction
	matches  []fragMatch
	backends []*model.Backend // a slice, not the map compileRoute fills: thousands are kept
	names    *model.HTTPShape // its actions' part of the table's shape, once named (tableshape.go)
	named    bool
}

type fragMatch struct {
	rule           model.HTTPRule
	ruleIdx, match int
}

// fragment is route a's rules compiled for an HTTP frontend of this
// port and scheme (compileRoute), from the memo when a's inputs are the
// same; the backends they use are added to backends.
func (w *world) fragment(a *attachedRoute, port uint16, scheme string, backends map[string]*model.Backend) *fragment {
	e := w.memo.entry(a.r, w)
	if e == nil {
		return compileRoute(a.r, port, scheme, w, backends)
	}
	k := fragKey{port: port, scheme: scheme, gw: w.serving}
	f := e.frag(k, a.snis)
	if f == nil {
		made := map[string]*model.Backend{}
		f = compileRoute(a.r, port, scheme, w, made)
		f.backends = make([]*model.Backend, 0, len(made))
		for n, b := range made {
			if o := backends[n]; o != nil {
				b = o // the same backend another route made: kept once
			}
			f.backends = append(f.backends, b)
		}
		e.frags = append(e.frags, fragAt{k: k, snis: a.snis, f: f})
		w.memo.Compiled++
	} else {
		w.memo.Reused++
	}
	for _, b := range f.backends {
		// A backend's content follows from its name and the world, so
		// the one made first, as a whole pass would, is the same.
		w.recent.put(backends, b) // backendsrecent.go
	}
	return f
}

// snisOf is routeSNIs(r.hostnames, listener), kept on r with a memo
// (an HTTPRoute's route lives as long as its object).
func (w *world) snisOf(r *route, listener string) []string {
	if w.memo == nil {
		return routeSNIs(r.hostnames, listener)
	}
	for _, s := range r.snis {
		if s.listener == listener {
			return s.snis
		}
	}
	s := routeSNIs(r.hostnames, listener)
	r.snis = append(r.snis, listenerSNIs{listener, s})
	return s
}

// listenerSNIs are a route's server names on listeners of a hostname.
// A route has one or a few: a slice, not a map (thousands are kept).
type listenerSNIs struct {
	listener string
	snis     []string
}

// frag is e's fragment for frontend k and these server names.
func (e *routeEntry) frag(k fragKey, snis []string) *fragment {
	for _, f := range e.frags {
		if f.k == k && slices.Equal(f.snis, snis) {
			return f.f
		}
	}
	return nil
}
