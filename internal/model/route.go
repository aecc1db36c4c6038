package model

import (
	"regexp"
	"slices"
	"time"
)

// Route chooses the backend of a frontend's connections (Gateway API
// listeners): a frontend with Routes tries them in order and the first
// whose SNI matches takes the connection; a connection no route takes is
// closed. Routes replace Frontend.Backend.
type Route struct {
	// SNI is the TLS server name the route takes: an exact name, or
	// "*.suffix" for every name ending in ".suffix" (one or more labels
	// before it). Lower case, checked by ValidSNI. "": every connection
	// (a TCP listener), then the route must be the frontend's last.
	SNI string
	// Backends share the route's connections in proportion to their
	// Weight (> 0). RejectBackend takes the share of connections that
	// must be refused (a backendRef that does not resolve).
	Backends []WeightedBackend
}

// WeightedBackend is one backend of a Route and its share.
type WeightedBackend struct {
	Name   string
	Weight int32
}

// RejectBackend is a backend with no servers: connections sent to it are
// closed. The producer adds it to Config.Backends when a Route names it.
// Its name cannot be a Service's (those start with a letter or digit).
const RejectBackend = "_reject"

// DefaultInspectDelay is how long a frontend routed by SNI waits for the
// client's TLS ClientHello.
const DefaultInspectDelay = 5 * time.Second

// sni is a DNS name of lower-case labels, optionally led by "*.": what a
// Gateway API hostname may be, and nothing HAProxy could read as syntax.
var sni = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$`)

// ValidSNI reports whether h may be a Route's SNI.
func ValidSNI(h string) bool { return len(h) <= 253 && sni.MatchString(h) }

// Routed reports whether f chooses backends by its Routes.
func (f Frontend) Routed() bool { return len(f.Routes) > 0 }

// BySNI reports whether some route of f matches a TLS server name: the
// frontend then waits (InspectDelay) for the ClientHello.
func (f Frontend) BySNI() bool {
	return slices.ContainsFunc(f.Routes, func(r Route) bool { return r.SNI != "" })
}

func equalRoutes(a, b []Route) bool {
	return slices.EqualFunc(a, b, func(x, y Route) bool { return x.SNI == y.SNI && slices.Equal(x.Backends, y.Backends) })
}
