package model

import (
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

// ValidSNI reports whether h may be a Route's SNI: a DNS name of
// lower-case labels, optionally led by "*.", at most 253 bytes; each
// label 1-63 letters, digits and inner hyphens. What a Gateway API
// hostname may be, and nothing HAProxy could read as syntax. Written out
// (the regular expression it replaces, kept in route_test.go, took ~1 us
// a name in the fixed HTTPS listener's claims at 1,000 Gateways).
func ValidSNI(h string) bool {
	if len(h) > 253 {
		return false
	}
	if len(h) >= 2 && h[0] == '*' && h[1] == '.' {
		h = h[2:]
	}
	start := 0
	for i := 0; i <= len(h); i++ {
		if i < len(h) && h[i] != '.' {
			continue
		}
		if !validLabel(h[start:i]) {
			return false
		}
		start = i + 1
	}
	return true
}

// validLabel reports whether l is one DNS label of ValidSNI.
func validLabel(l string) bool {
	if len(l) == 0 || len(l) > 63 {
		return false
	}
	for i := 0; i < len(l); i++ {
		switch c := l[i]; {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(l)-1:
		default:
			return false
		}
	}
	return true
}

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
