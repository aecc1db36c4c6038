package spares

import (
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// The view's frontends by name (issue 29). When the model says which
// frontends it added, removed or replaced against the last view's
// (model.FrontendChanges: desired's delta pass, a new Service), the
// others are the last view's, unlooked at: copied in runs, their places
// shifted. It holds only where the walk of viewdelta.go would keep every
// frontend not named: none of the last view's is routed or HTTP (l.plain,
// so the reject backend stays away), and every backend whose HAProxy name
// may have changed (moved) is one the model added or removed, which only
// a named frontend can name. Anything else takes the walk.

// named fills out.Frontends (empty) with the view of cfg's frontends,
// those in names (sorted) made anew, and returns each cfg frontend's
// index in it (-1: left out); false when it does not hold (out.Frontends
// then holds what it appended: the caller empties it).
func (l *lastView) named(out *model.Config, cfg model.Config, names []string, moved map[string]bool,
	haproxyName func(string) (string, bool)) ([]int, bool) {
	if !l.plain || !slices.IsSorted(names) {
		return nil, false
	}
	for name := range moved {
		if hasBackend(l.backends, name) && hasBackend(cfg.Backends, name) {
			return nil, false // kept by the model: a kept frontend may name it
		}
	}
	frontOut := make([]int, len(cfg.Frontends))
	i, j := 0, 0 // in cfg.Frontends, in l.frontends
	// keep takes cfg.Frontends[i:in], the last view's l.frontends[j:jn].
	keep := func(in, jn int) bool {
		if in-i != jn-j {
			return false
		}
		first, next := -1, -1 // the run of the last view's out.Frontends
		at := len(out.Frontends)
		for t := range in - i {
			k := l.frontOut[j+t]
			frontOut[i+t] = -1
			if k < 0 {
				continue
			}
			switch {
			case first < 0:
				first = k
			case k != next:
				return false // not one run: cannot be
			}
			frontOut[i+t], next = at+k-first, k+1
		}
		if first >= 0 {
			out.Frontends = append(out.Frontends, l.out.Frontends[first:next]...)
		}
		i, j = in, jn
		return true
	}
	for _, name := range names {
		in, now := model.FrontendIndex(cfg.Frontends[i:], name)
		jn, was := model.FrontendIndex(l.frontends[j:], name)
		if !keep(i+in, j+jn) {
			return nil, false
		}
		if was {
			j++
		}
		if !now {
			continue
		}
		f := &cfg.Frontends[i]
		if f.Routed() || f.HTTP != nil {
			return nil, false // the reject backend may come: the walk's
		}
		frontOut[i] = -1
		if vf, ok := viewFrontend(*f, haproxyName); ok {
			frontOut[i] = len(out.Frontends)
			out.Frontends = append(out.Frontends, vf)
		}
		i++
	}
	if !keep(len(cfg.Frontends), len(l.frontends)) {
		return nil, false
	}
	return frontOut, true
}

// hasBackend reports whether bs, sorted by name, has one named name.
func hasBackend(bs []*model.Backend, name string) bool {
	_, found := slices.BinarySearchFunc(bs, name, func(b *model.Backend, n string) int { return strings.Compare(b.Name, n) })
	return found
}

// plainFrontends reports whether none of fs is routed or HTTP (the
// frontends the walk always makes again).
func plainFrontends(fs []model.Frontend) bool {
	return !slices.ContainsFunc(fs, func(f model.Frontend) bool { return f.Routed() || f.HTTP != nil })
}
