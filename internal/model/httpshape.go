package model

import "slices"

// HTTPShape is what an HTTP table's fixed rules are written from besides
// its maps (render/http.go): the header sets its rules match on and the
// header names its actions change, whether it has access rules and which
// of them its actions use. It follows from Hosts and Actions alone; at
// thousands of routes walking them costs a pass about a millisecond each
// time it is asked (the maps' memo and the structure hash both ask), so
// every producer keeps it with the table (issue 30): one that builds a
// table from its last one keeps it up to date from what changed
// (HTTP.SetShape: the gateway's table memo, the Ingress pass memo through
// a ShapeCounter), a whole build computes it once (Shaped). A table
// without one (the zero value, one built by hand) is valid: its methods
// walk it. ShapeOf is the only walk of a table for its shape.
type HTTPShape struct {
	HeaderSets                  [][]string // as HTTP.HeaderSets
	Modified, Response, Backend []string   // as ModifiedHeaders, ResponseHeaders, BackendHeaders
	Access                      bool       // as HasAccess
}

// ShapeOf is h's shape computed from its hosts and actions (the kept
// one ignored).
func ShapeOf(h *HTTP) HTTPShape {
	return HTTPShape{HeaderSets: h.headerSets(), Modified: h.modifiedHeaders(), Response: h.responseHeaders(),
		Backend: h.backendHeaders(), Access: h.hasAccess()}
}

// Shaped keeps ShapeOf(h) as h's shape and returns h: a table built
// whole.
func Shaped(h *HTTP) *HTTP {
	s := ShapeOf(h)
	h.shape = &s
	return h
}

// SetShape sets the shape h's producer kept for it (a memo's, counted
// or united from what changed: ShapeCounter, HTTPShape.Union), which
// must be ShapeOf(h); nil: none, computed when asked. Tables share
// shapes: s is never changed after.
func (h *HTTP) SetShape(s *HTTPShape) { h.shape = s }

// KeptShape is the shape h's producer kept for it, nil when none.
func (h *HTTP) KeptShape() *HTTPShape { return h.shape }

// shapeOf is h's shape: the kept one, else ShapeOf(h), a walk of the
// table (every producer keeps one: at thousands of routes the walk costs
// a pass about a millisecond each time it is asked). Render and the
// structure hash both ask through it.
func (h *HTTP) shapeOf() *HTTPShape {
	if h.shape != nil {
		return h.shape
	}
	s := ShapeOf(h)
	return &s
}

// SameShape reports whether h and o have the same shape.
func (h *HTTP) SameShape(o *HTTP) bool { return h.shapeOf().Equal(*o.shapeOf()) }

// Union is the shape of a table holding every rule and action of two
// tables of shapes s and o (ingress.MergeHTTP's): their header sets and
// names each once, in ShapeOf's order and form.
func (s HTTPShape) Union(o HTTPShape) HTTPShape {
	u := HTTPShape{Access: s.Access || o.Access}
	u.HeaderSets = append([][]string{{}}, s.HeaderSets[min(1, len(s.HeaderSets)):]...)
	for _, set := range o.HeaderSets[min(1, len(o.HeaderSets)):] {
		if !slices.ContainsFunc(u.HeaderSets[1:], func(x []string) bool { return slices.Equal(x, set) }) {
			u.HeaderSets = append(u.HeaderSets, set)
		}
	}
	SortHeaderSets(u.HeaderSets[1:])
	names := func(a, b []string) []string {
		if len(a)+len(b) == 0 {
			return nil
		}
		return slices.Compact(slices.Sorted(slices.Values(slices.Concat(a, b))))
	}
	u.Modified, u.Response, u.Backend = names(s.Modified, o.Modified), names(s.Response, o.Response), names(s.Backend, o.Backend)
	return u
}

// Equal reports whether s and o hold the same sets and names (nil and
// empty alike).
func (s HTTPShape) Equal(o HTTPShape) bool {
	return slices.EqualFunc(s.HeaderSets, o.HeaderSets, slices.Equal) && slices.Equal(s.Modified, o.Modified) &&
		slices.Equal(s.Response, o.Response) && slices.Equal(s.Backend, o.Backend) && s.Access == o.Access
}

// ActionNames is the part of a shape some actions give: the header names
// they change, unsorted and possibly repeated, and whether one carries
// access; nil when they give nothing.
func ActionNames(acts []HTTPAction) *HTTPShape {
	var s HTTPShape
	for _, a := range acts {
		s.Modified = append(s.Modified, HeaderMods{Set: a.Set, Add: a.Add, Remove: a.Remove}.Names()...)
		if a.Ext != nil {
			s.Response = append(s.Response, a.Ext.Response.Names()...)
			for _, m := range a.Ext.BackendMods {
				s.Backend = append(s.Backend, m.Names()...)
			}
		}
		s.Access = s.Access || a.Access != nil
	}
	if len(s.Modified) == 0 && len(s.Response) == 0 && len(s.Backend) == 0 && !s.Access {
		return nil
	}
	return &s
}

// Add adds o's action part (ActionNames) to s.
func (s *HTTPShape) Add(o *HTTPShape) {
	s.Modified = append(s.Modified, o.Modified...)
	s.Response = append(s.Response, o.Response...)
	s.Backend = append(s.Backend, o.Backend...)
	s.Access = s.Access || o.Access
}

// SortNames sorts s's names, each once, as the table's methods give them.
func (s *HTTPShape) SortNames() {
	for _, p := range []*[]string{&s.Modified, &s.Response, &s.Backend} {
		slices.Sort(*p)
		*p = slices.Compact(*p)
	}
}
