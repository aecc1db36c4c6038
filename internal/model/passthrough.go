package model

import "slices"

// Passthrough is TLS passthrough beside termination on one address and
// port (an Ingress's ssl-passthrough): on the HTTP table of a frontend
// that terminates TLS, the server names whose connections HAProxy does
// not terminate but hands, untouched, to a backend of their own (mode
// tcp), chosen by the server name of the ClientHello. Whether a table
// has one (not nil, even without routes) is structure (a frontend in
// front of the terminating one: render/passthrough.go); its routes are
// map data.
type Passthrough struct {
	// Routes are sorted by SNI, one per SNI.
	Routes []PassRoute
}

// PassRoute sends the TLS connections naming SNI (ValidSNI, an exact
// name: no wildcard) to Backend (a backend of the model that is not
// HTTP).
type PassRoute struct {
	SNI, Backend string
}

// Equal compares two passthroughs, routes included.
func (p *Passthrough) Equal(q *Passthrough) bool {
	if p == nil || q == nil {
		return p == q
	}
	return slices.Equal(p.Routes, q.Routes)
}
