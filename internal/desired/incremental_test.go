package desired_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired/desiredtest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The incremental pass (the memo recomputing only the Services whose
// slices came or went or that depend on a node that changed) and a pass
// over the whole world from scratch agree on every backend after every
// event, whatever the order of Node, EndpointSlice and resync events, and
// however events coalesce into passes (issue 36); and a consumer that
// takes only the backends Config.Changes lists holds the same servers.
//
// The seeds are fixed; HKS_INCREMENTAL_SEED=N runs seed N alone (a
// failure prints its seed and the events that led to it).
func TestIncrementalMatchesWholeWorld(t *testing.T) {
	for _, seed := range desiredtest.Seeds(t, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			w := desiredtest.New(seed)
			w.Churn = seed%2 == 0 // Services deleted and created again (servicesDelta)
			view := newView(w.Last.Config)
			fronts := 0 // passes that said which frontends they changed
			for step := range 300 {
				prev := w.Last.Config
				w.Step()
				view.take(prev, w.Last.Config)
				if msg := compare(w, view); msg != "" {
					t.Fatalf("step %d: %s\n%s", step, msg, w.Log(12))
				}
				if msg, said := frontChanges(prev, w.Last); msg != "" {
					t.Fatalf("step %d: %s\n%s", step, msg, w.Log(12))
				} else if said {
					fronts++
				}
			}
			if w.Fast == 0 {
				t.Fatal("no pass was incremental")
			}
			if w.Churn && fronts == 0 {
				t.Fatal("no pass said which frontends it changed (servicesDelta not taken)")
			}
		})
	}
}

// frontChanges checks res.FrontChanges (said: set) against the whole
// walk of prev's frontends and res's.
func frontChanges(prev model.Config, res desired.Result) (msg string, said bool) {
	fc, cfg := res.FrontChanges, res.Config
	if fc == nil {
		return "", false
	}
	names, ok := fc.ChangedFrom(cfg.Frontends, prev.Frontends)
	if !ok {
		return "FrontChanges set, but not from the last pass's frontends to this pass's", true
	}
	if want := model.ChangedFrontends(prev.Frontends, cfg.Frontends); !slices.Equal(names, want) {
		return fmt.Sprintf("FrontChanges.Names %v, the whole walk %v", names, want), true
	}
	return "", true
}

// view is each backend's servers as a consumer of Config.Changes holds
// them: a Config derived from the previous one takes its listed backends
// only.
type view map[string][]model.Server

func newView(cfg model.Config) view {
	v := view{}
	v.take(model.Config{}, cfg)
	return v
}

func (v view) take(prev, cfg model.Config) {
	ch := cfg.Changes
	switch {
	case ch != nil && model.SameSlice(ch.Base, prev.Backends) && len(prev.Backends) > 0:
		for _, i := range ch.Backends {
			v[cfg.Backends[i].Name] = cfg.Backends[i].Servers
		}
	case ch == nil && model.SameSlice(cfg.Backends, prev.Backends) && len(prev.Backends) > 0:
		// The very backends of the last pass: nothing to take.
	default:
		clear(v)
		for _, b := range cfg.Backends {
			v[b.Name] = b.Servers
		}
	}
}

func compare(w *desiredtest.World, v view) string {
	want, got := w.Whole(), w.Last
	if g, x := desiredtest.Servers(got.Config), desiredtest.Servers(want.Config); g != x {
		return "the incremental pass differs from the whole world:\n" + desiredtest.Diff(g, x)
	}
	// Beyond servers (nil and empty alike), the configs are equal.
	if len(got.Config.Backends) != len(want.Config.Backends) {
		return fmt.Sprintf("%d backends, want %d", len(got.Config.Backends), len(want.Config.Backends))
	}
	for i, b := range got.Config.Backends {
		g, x := *b, *want.Config.Backends[i]
		g.Servers, x.Servers = nil, nil
		if !reflect.DeepEqual(g, x) {
			return fmt.Sprintf("backend %s differs beyond its servers:\n%#v\n%#v", b.Name, g, x)
		}
	}
	if !reflect.DeepEqual(got.Config.Frontends, want.Config.Frontends) {
		return "the frontends differ"
	}
	var b strings.Builder
	for _, be := range want.Config.Backends {
		fmt.Fprintf(&b, "%s: %s\n", be.Name, desiredtest.List(v[be.Name]))
	}
	if g, x := b.String(), desiredtest.Servers(want.Config); g != x {
		return "what Config.Changes told differs from the whole world:\n" + desiredtest.Diff(g, x)
	}
	return ""
}
