package dataplaneapi

import (
	"maps"
	"slices"
	"sort"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
)

// change is one write to the API.
type change struct {
	method string // POST, PUT, DELETE
	path   string
	obj    Object
	full   bool // a whole section with its children (full_section=true)
	live   bool // a server PUT the API applies without reload outside a transaction
	what   string
	parent string // a child's section
	// rules: a PUT of a rule list (path), whole, to list ([] for none):
	// the http-check rules of the operator's backend in seed mode, which
	// a write of the backend without full_section leaves as they were.
	rules bool
	list  []any
}

func sortByName(objs []Object) {
	sort.SliceStable(objs, func(i, j int) bool {
		a, _ := objs[i]["name"].(string)
		b, _ := objs[j]["name"].(string)
		return a < b
	})
}

// diff lists the writes that turn have into want, skipping the backends
// in clean. Frontends are deleted first and written last, so that no
// frontend ever names a backend that is gone or not yet there (the API
// checks the result only at commit, but the order also suits writes
// outside a transaction). With full (every Service's sections, all the
// driver's), a section added, or changed in more than its servers'
// address, port or maintenance, is written whole with its children, in
// one request: a write costs the API a rewrite of haproxy.cfg, even
// inside a transaction.
func diff(have, want *state, clean map[string]bool, full bool) []change {
	var out []change
	for _, name := range sortedKeys(have.frontends) {
		if want.frontends[name] == nil {
			out = append(out, change{method: "DELETE", path: dataplane.FrontendPath(name), what: "frontend " + name + " deleted"})
		}
	}
	for _, name := range sortedKeys(have.backends) {
		if want.backends[name] == nil {
			out = append(out, change{method: "DELETE", path: dataplane.BackendPath(name), what: "backend " + name + " deleted"})
		}
	}
	out = diffSections(out, have.backends, want.backends, clean, full, "backend", dataplane.BackendsPath, dataplane.BackendPath, dataplane.ServersPath, dataplane.ServerPath)
	out = diffSections(out, have.frontends, want.frontends, clean, full, "frontend", dataplane.FrontendsPath, dataplane.FrontendPath, dataplane.BindsPath, dataplane.BindPath)
	return out
}

func diffSections(out []change, have, want map[string]*section, clean map[string]bool, full bool, kind, all string, one func(string) string,
	children func(string) string, child func(string, string) string) []change {
	for _, name := range dirtyKeys(want, clean) {
		w, h := want[name], have[name]
		if w == h {
			continue // clean: nothing of it changed
		}
		if full && h == nil {
			out = append(out, change{method: "POST", path: all, obj: whole(w, kind), full: true, what: kind + " " + name + " added"})
			continue
		}
		if full && !sameShape(h, w, kind) {
			out = append(out, change{method: "PUT", path: one(name), obj: whole(w, kind), full: true, what: kind + " " + name + " changed"})
			continue
		}
		if h == nil {
			out = append(out, change{method: "POST", path: all, obj: w.base, what: kind + " " + name + " added"})
			h = &section{}
		} else if !sameBut(h.base, w.base, httpCheckList) {
			out = append(out, change{method: "PUT", path: one(name), obj: w.base, what: kind + " " + name + " changed"})
		}
		if kind == "backend" && !same(h.base[httpCheckList], w.base[httpCheckList]) {
			l, _ := w.base[httpCheckList].([]any)
			out = append(out, change{method: "PUT", path: dataplane.HTTPChecksPath(name), rules: true, list: l, what: kind + " " + name + ": http checks changed"})
		}
		for _, c := range h.children {
			cn, _ := c["name"].(string)
			if o, _ := w.child(cn); o == nil {
				out = append(out, change{method: "DELETE", path: child(name, cn), what: kind + " " + name + ": " + cn + " deleted"})
			}
		}
		for _, c := range w.children {
			cn, _ := c["name"].(string)
			o, _ := h.child(cn)
			switch {
			case o == nil:
				out = append(out, change{method: "POST", path: children(name), obj: c, what: kind + " " + name + ": " + cn + " added"})
			case !same(o, c):
				out = append(out, change{method: "PUT", path: child(name, cn), obj: c, live: kind == "backend" && onlyLive(o, c),
					what: kind + " " + name + ": " + cn + " changed", parent: name})
			}
		}
	}
	return out
}

func sortedKeys(m map[string]*section) []string {
	return slices.Sorted(maps.Keys(m))
}

// dirtyKeys is the sorted names of m not in clean (most are, at scale).
func dirtyKeys(m map[string]*section, clean map[string]bool) []string {
	out := make([]string, 0, len(m)-min(len(clean), len(m)))
	for k := range m {
		if !clean[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// structural reports whether any change needs a reload.
func structural(cs []change) bool {
	return slices.ContainsFunc(cs, func(c change) bool { return !c.live })
}

// whole is a section with its children, as written with full_section=true.
func whole(s *section, kind string) Object {
	o := maps.Clone(s.base)
	key := "servers"
	if kind == "frontend" {
		key = "binds"
	}
	m := make(map[string]any, len(s.children))
	for _, c := range s.children {
		m[c["name"].(string)] = c
	}
	o[key] = m
	return o
}

// sameShape reports whether want differs from have only in what a server
// PUT outside a transaction changes live (a backend's servers' address,
// port, weight or maintenance).
func sameShape(have, want *section, kind string) bool {
	if !same(have.base, want.base) || len(have.children) != len(want.children) {
		return false
	}
	for _, c := range want.children {
		o, _ := have.child(c["name"].(string))
		if o == nil || (kind == "backend" && !onlyLive(o, c)) || (kind != "backend" && !same(o, c)) {
			return false
		}
	}
	return true
}
