// Package modeledit edits a model's frontends at random as a new pass's
// model would (a new slice; an edited frontend a copy, its binds a new
// slice; the others the same values), for the tests that compare a memo
// kept by frontend with the whole computation (render.ListenerMemo,
// the tproxy driver's wanted elements).
package modeledit

import (
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Frontends is fs, sorted by name, edited once: a frontend made by
// newFront added, or one removed, given a bind more (newBind), one less
// or another, another backend (newFront's), the other PROXY flag, or
// routed (no longer listened) or back.
func Frontends(r *rand.Rand, fs []model.Frontend, newFront func() model.Frontend, newBind func() model.Bind) []model.Frontend {
	out := slices.Clone(fs)
	if len(out) < 3 || r.IntN(6) == 0 {
		return Insert(out, newFront())
	}
	i := r.IntN(len(out))
	f := out[i]
	switch r.IntN(7) {
	case 0:
		return slices.Delete(out, i, i+1)
	case 1:
		f.Binds = append(slices.Clone(f.Binds), newBind())
	case 2:
		if len(f.Binds) > 1 {
			f.Binds = slices.Clone(f.Binds[1:])
		}
	case 3:
		b := slices.Clone(f.Binds)
		b[0] = newBind()
		f.Binds = b
	case 4:
		f.Backend = newFront().Backend
	case 5:
		f.AcceptProxy = !f.AcceptProxy
	case 6:
		if f.Routed() {
			f.Routes = nil
		} else {
			f.Routes = []model.Route{{Backends: []model.WeightedBackend{{Name: f.Backend, Weight: 1}}}}
		}
	}
	out[i] = f
	return out
}

// Insert is fs, sorted by name, with f in its place.
func Insert(fs []model.Frontend, f model.Frontend) []model.Frontend {
	i, _ := slices.BinarySearchFunc(fs, f.Name, func(x model.Frontend, n string) int { return strings.Compare(x.Name, n) })
	return slices.Insert(fs, i, f)
}
