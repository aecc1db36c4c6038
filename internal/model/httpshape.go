package model

import "slices"

// HTTPShape is what an HTTP table's fixed rules are written from besides
// its maps (render/http.go): the header sets its rules match on and the
// header names its actions change, and whether it has access rules. It
// follows from Hosts and Actions alone; at thousands of routes walking
// them costs a pass about a millisecond each time it is asked (the maps'
// memo and the structure hash both ask), so a producer that builds a
// table from its last one keeps it up to date from what changed and sets
// HTTP.Shape (issue 30). ShapeOf is the same computed from the table.
type HTTPShape struct {
	HeaderSets                  [][]string // as HTTP.HeaderSets
	Modified, Response, Backend []string   // as ModifiedHeaders, ResponseHeaders, BackendHeaders
	Access                      bool       // as HasAccess
}

// ShapeOf is h's shape computed from its hosts and actions (h.Shape
// ignored).
func ShapeOf(h *HTTP) HTTPShape {
	c := *h
	c.Shape = nil
	return HTTPShape{HeaderSets: c.HeaderSets(), Modified: c.ModifiedHeaders(), Response: c.ResponseHeaders(),
		Backend: c.BackendHeaders(), Access: c.HasAccess()}
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
