package runtimeapi

import (
	"time"
)

// When a reload may start. A reload of a large config costs seconds
// (`haproxy -c`, then the new worker parsing it), and changes that are
// written together reach the controller a few milliseconds apart: a new
// Service, then its EndpointSlices. Reloading for the first at once leaves
// the second to another reload: a new backend is sized for the servers it
// has when rendered (none before its slice), and its servers then no
// longer fit. So a reload waits until the first change it carries is a
// short settle time old; what arrives meanwhile shares it. A change that
// queued up behind a reload in progress is older than that when its pass
// runs, and waits for nothing more than the minimum interval between
// reloads; the first reload after a start waits for nothing. The passes in
// between apply what the Runtime API can (see Apply), so server changes
// never wait for either.

// reloadGate decides how long a reload that a pass wants must still wait.
// It holds no clock: callers pass the time.
type reloadGate struct {
	minInterval time.Duration // between the end of a reload and the start of the next
	settle      time.Duration // the age the first change a reload carries must reach
	last        time.Time     // when the last reload ended (zero: none yet)
	wanted      time.Time     // when the first change wanting the reload not yet made arrived (zero: none)
}

// wait returns how long the reload a pass wants at now must still wait;
// zero means start it now. changed is when the change behind the pass
// was first seen; zero (not known) means now.
func (g *reloadGate) wait(now, changed time.Time) time.Duration {
	if g.last.IsZero() {
		// The first reload follows the start: the caches already hold
		// the whole world, and nothing comes to share it.
		return 0
	}
	if changed.IsZero() || changed.After(now) {
		changed = now
	}
	if g.wanted.IsZero() || changed.Before(g.wanted) {
		g.wanted = changed
	}
	w := max(g.settle-now.Sub(g.wanted), g.minInterval-now.Sub(g.last))
	return max(w, 0)
}

// none records a pass that needs no reload: a reload wanted before (say
// for a Service deleted since) is not any more.
func (g *reloadGate) none() { g.wanted = time.Time{} }

// reloaded records the end of a reload (whether it succeeded or not).
func (g *reloadGate) reloaded(now time.Time) {
	g.last, g.wanted = now, time.Time{}
}
