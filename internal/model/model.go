// Package model is the small, validated description of what HAProxy should
// run: frontends, backends and their servers. It is produced by the desired
// package from Kubernetes objects and consumed by the plan and render
// packages. Every string in it is either a fixed keyword or a name built from
// Kubernetes DNS labels, so nothing here can carry HAProxy syntax.
package model

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is the whole desired HAProxy state. Frontends and Backends are
// sorted by Name. Backends are pointers, shared between Configs and
// immutable once in one: a pass that changes a few servers copies only
// the pointers (see Backend).
type Config struct {
	Frontends []Frontend
	Backends  []*Backend
	// Changes, when set, says how this Config was derived: it is the
	// Config whose Backends array is Changes.Base, but for the servers of
	// the listed backends. Consumers may use it to skip comparing the
	// rest; ignoring it is always correct.
	Changes *Changes
	// UDP holds the UDP ports, sorted by Name, for the kernel's load
	// balancer (the nftables driver). The HAProxy driver ignores it.
	UDP []UDPService
	// HTTPSHeld are the server names a shared TLS-terminating listener
	// (render's fixed HTTPS listener) served before this Config, each
	// with the frontend it served it for: its claims are first-come, a
	// frontend that held a name keeps it against a newcomer
	// (render.HTTPSListened).
	// Sorted, no duplicates; set by whoever hands one Config to all of
	// that listener's consumers (tproxy.Ordered, from render.HTTPSHolds);
	// nil: nothing is known (name order). Views of a Config keep it.
	HTTPSHeld []HeldName
	// HTTPSClaimed, when set, is the fixed HTTPS listener's claims for
	// this Config (render.Options.HTTPSListened's answer): made once a
	// pass by whoever sets HTTPSHeld (tproxy.Ordered), so that HAProxy's
	// driver and the kernel's sets, each asking several times a pass,
	// read one answer. A Config derived with other HTTP frontends must
	// not keep it (nil: asked again); views that keep every HTTP
	// frontend's name, TLS and binds (the pool's, the HTTP listener's)
	// do.
	HTTPSClaimed *Claimed
}

// Claimed is a set of frontends' names, computed once for a Config.
type Claimed struct{ Names map[string]bool }

// Changes describes a Config derived from another by replacing the
// servers of a few backends.
type Changes struct {
	Base     []*Backend // the Backends array of the Config derived from
	Backends []int      // indices in Backends (and Base) whose servers changed, ascending
}

// Bind is one listen address of a frontend. An invalid (zero) Addr means all
// addresses.
type Bind struct {
	Addr netip.Addr
	Port uint16
	// Transparent binds Addr even when the host does not hold it (yet):
	// an address that arrives later (keepalived, BGP, a local route)
	// needs no reload. HAProxy's `transparent` (IP_TRANSPARENT with
	// CAP_NET_ADMIN, else IP_FREEBIND, which needs no privilege).
	Transparent bool
}

// Frontend is one listening proxy.
type Frontend struct {
	Name          string
	Service       string // "namespace/name", for messages only
	Binds         []Bind
	AcceptProxy   bool
	MaxConn       int           // 0: HAProxy's default
	TimeoutClient time.Duration // 0: the defaults section's value
	Backend       string
	// SourceRanges, when not empty, are the only clients accepted
	// (spec.loadBalancerSourceRanges): others are refused at connection
	// time. Sorted, masked, no duplicates. Whether a frontend has ranges
	// is its structure; which ranges, with ACL files, is not (the driver
	// changes them through the Runtime API).
	SourceRanges []netip.Prefix
	// Routes, when set, choose each connection's backend instead of
	// Backend (see Route); InspectDelay is how long to wait for a TLS
	// ClientHello when a route matches by SNI (0: DefaultInspectDelay).
	Routes       []Route
	InspectDelay time.Duration
	// TLS, when set, terminates TLS on the binds (tls.go).
	TLS *TLS
	// HTTP, when set, makes the frontend an HTTP one whose requests
	// are routed by this table (http.go) instead of Routes or Backend.
	HTTP *HTTP
}

// Restricted reports whether f accepts only some clients.
func (f Frontend) Restricted() bool { return len(f.SourceRanges) > 0 }

// RangesOf are f's source ranges of one family (IPv6 when v6, else IPv4).
// A client is checked against the ranges of its own family only, as
// kube-proxy and the nftables driver do: ["10.0.0.0/8", "::/0"] lets in
// IPv4 clients of 10/8 and every IPv6 client, and a family without ranges
// none of its clients. An IPv4-mapped client (::ffff:a.b.c.d) is an IPv4
// one; an IPv4-mapped prefix (settings makes IPv4 prefixes of them) would
// be an IPv6 one that such a client never meets.
func (f Frontend) RangesOf(v6 bool) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range f.SourceRanges {
		if p.Addr().Is4() != v6 {
			out = append(out, p)
		}
	}
	return out
}

// Check holds the health-check settings of a backend's servers.
type Check struct {
	Inter   time.Duration
	Rise    int
	Fall    int
	HTTP    HTTPCheck // zero: a TCP connect check
	Port    uint16    // the port checked; 0: the server's own
	Enabled bool      // beside Port: 88 bytes rather than 96
}

// HTTPCheck makes a health check an HTTP GET that must answer 200, over
// TLS when SSL is set. The zero value is no HTTP check. Paths are checked
// with ValidCheckPath and ValidFilePath by whoever builds the model.
type HTTPCheck struct {
	Path string // request path, e.g. /readyz; "" for none
	SSL  bool   // check over TLS (HAProxy's check-ssl)
	// CAFile verifies the server's certificate; empty with SSL means no
	// verification (the producer decides when that is allowed).
	CAFile string
	// CertFile is a PEM file holding the client certificate and its key
	// that the check presents; "" for none.
	CertFile string
}

// ValidCheckPath reports whether p is an absolute URL path made only of
// unreserved characters and slashes: nothing HAProxy could read as syntax.
func ValidCheckPath(p string) bool {
	return strings.HasPrefix(p, "/") && len(p) <= 256 && onlyChars(p, "/-._~")
}

// ValidFilePath reports whether p is an absolute file path of letters,
// digits and /-._ only (no spaces, quotes or # that HAProxy would parse).
func ValidFilePath(p string) bool {
	return strings.HasPrefix(p, "/") && len(p) <= 1024 && !strings.Contains(p, "/../") &&
		!strings.HasSuffix(p, "/..") && onlyChars(p, "/-._")
}

func onlyChars(s, extra string) bool {
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && !strings.ContainsRune(extra, r) {
			return false
		}
	}
	return true
}

// Backend is one pool of servers. A Config holds pointers to its
// backends, and successive Configs share the backends that did not change:
// once in a Config, a Backend is never modified (see WithServers). Its
// flags come last, side by side: 240 bytes rather than 280 (issue 29).
type Backend struct {
	Name           string
	Service        string // "namespace/name", for messages only
	Balance        string // roundrobin, leastconn, source, first, random
	Check          Check
	TimeoutConnect time.Duration
	TimeoutServer  time.Duration
	// Affinity, when set, keeps each client (source address) on the
	// server it first went to for this long after its last connection
	// (ClientIP session affinity: a stick table).
	Affinity time.Duration
	Servers  []Server // sorted by Addr, then Port

	// TLS, with HTTP, makes the servers speak TLS (backendtls.go).
	TLS *BackendTLS
	// Cookie, with HTTP, keeps each client on its server by a cookie
	// (cookie.go).
	Cookie *CookieAffinity `json:",omitempty"`

	// RetryOn, with HTTP: when a request is retried (HAProxy's retry-on
	// keywords, ValidRetryOn: retry.go), Retries times at most; "": the
	// defaults' (connection failures, retries 2). A route rule's retry
	// policy: a backend of its own per policy and Service port.
	RetryOn string
	Retries int
	// Slots: at least this many server slots when the backend is (re)sized
	// (plan.Assign); 0: what its servers need (plan.SlotsFor). Set only on
	// a spare of the pool sized for larger backends of its class
	// (spares.Spare.Slots), so that a backend that outgrows its spare's
	// slots moves to it with a map change rather than a reload.
	Slots int

	SendProxyV2 bool
	// TrackNodes: each server follows the state of its node, kept in the
	// NodesBackend (HAProxy's "track"), so that a node going out of
	// service or back is one Runtime API command for every backend at
	// once. Only for servers that point at nodes and are not
	// health-checked (HAProxy cannot both check and track a server).
	TrackNodes bool
	// HTTP: the backend serves HTTP frontends (HAProxy's mode http).
	HTTP bool
	// H2C: with HTTP, the servers speak HTTP/2 without TLS (prior
	// knowledge): a Service port's appProtocol kubernetes.io/h2c.
	H2C bool
	// RetryIdempotent, with RetryOn: a request of a method that is not
	// idempotent (POST, PATCH, LOCK: nginx's list) is retried only after
	// its connection failed, never once it was sent (an Ingress's
	// proxy-next-upstream without non_idempotent).
	RetryIdempotent bool `json:",omitempty"`
	// SourceChecked: a spare of the pool (internal/spares) behind the
	// fixed listener that carries the source-range rule of the listened
	// frontends it serves, reading two ACL files of its own (render's
	// SpareSources). Set only on the pool's classes and the spares of
	// them (spares.View), from whether the occupant has a restricted
	// frontend: an unrestricted Service's spare has no rule and no files
	// (HAProxy looks each pattern file up in a list of all of them, so
	// their number costs quadratically at every start and reload).
	SourceChecked bool
}

// WithServers is a copy of b with these servers. The backends of a Config
// are shared with the Configs derived from it (Changes), so nothing
// modifies one once it is in a Config: a changed backend is a new one.
func (b *Backend) WithServers(servers []Server) *Backend {
	c := *b
	c.Servers = servers
	return &c
}

// NodesBackend is the backend whose servers stand for the nodes, one per
// node with an address, for the backends with TrackNodes to follow. No
// frontend uses it. Its name cannot be a Service's backend name: those
// start with a letter or digit.
const NodesBackend = "_nodes"

// Nodes is c's NodesBackend; nil when servers follow no node.
func (c Config) Nodes() *Backend {
	for _, b := range c.Backends {
		if b.Name == NodesBackend {
			return b
		}
	}
	return nil
}

// NodeCheck is the node check (--node-check) the NodesBackend's servers
// carry, which the slots of a following backend that follow no node carry
// too; zero when nodes are not checked or the check names no port (a
// check of the node always names its port, so it neither goes to a
// Service's port nor sends a PROXY header).
func (c Config) NodeCheck() Check {
	if n := c.Nodes(); n != nil && n.Check.Enabled && n.Check.Port > 0 {
		return n.Check
	}
	return Check{}
}

// NodesAgentInter is the interval of the agent check that the
// NodesBackend's servers carry when nodes are not checked (HAProxy tracks
// only a server with a check or an agent; this agent connects to a port
// where nothing listens, and a failed connection to an agent never
// changes a server's state).
//
// After a start or a reload, HAProxy spreads the first run of every check
// and agent over the smallest interval of at least one second among them
// all, or over a check's own interval if that is longer (start_checks in
// its src/check.c). An agent of an hour, with no other interval of a
// second or more, would leave a check faster than that unrun for up to an
// hour after each reload, its server UP meanwhile. So the agent runs
// every second when some backend has a check faster than a second (its
// checks then start within a second), and every hour otherwise: a
// configuration without such a check is written as before, and the agent
// costs a refused loopback connection per node and second only where
// checks already cost several per server and second.
func (c Config) NodesAgentInter() time.Duration {
	for _, b := range c.Backends {
		if b.Check.Enabled && b.Check.Inter > 0 && b.Check.Inter < time.Second {
			return AgentInterFast
		}
	}
	return AgentInterIdle
}

// The intervals of the NodesBackend's agent (NodesAgentInter).
const (
	AgentInterIdle = time.Hour
	AgentInterFast = time.Second
)

// Server is one endpoint of a backend.
type Server struct {
	Addr  netip.Addr
	Port  uint16
	Drain bool // serving but terminating: no new connections
	// Maint: the server stays but out of service, because its node is not
	// Ready or is excluded. Set in the NodesBackend (by the desired
	// package) and on the slots of backends with TrackNodes that follow
	// no node (by the plan). Elsewhere such servers are left out, and a
	// slot that follows its node inherits the node's state instead.
	Maint bool
}

// Key identifies a server independently of its state.
func (s Server) Key() netip.AddrPort { return netip.AddrPortFrom(s.Addr, s.Port) }

// Equal reports whether f and g are the same frontend, field by field.
func (f Frontend) Equal(g Frontend) bool {
	return f.Name == g.Name && f.Service == g.Service && f.AcceptProxy == g.AcceptProxy &&
		f.MaxConn == g.MaxConn && f.TimeoutClient == g.TimeoutClient && f.Backend == g.Backend &&
		slices.Equal(f.Binds, g.Binds) && slices.Equal(f.SourceRanges, g.SourceRanges) &&
		f.InspectDelay == g.InspectDelay && equalRoutes(f.Routes, g.Routes) && f.TLS.Equal(g.TLS) && f.HTTP.Equal(g.HTTP)
}

// SameStructure reports whether b and c are equal but for their servers:
// whether Structure() of both would be equal.
func (b *Backend) SameStructure(c *Backend) bool {
	return b == c || b.Name == c.Name && b.Service == c.Service && b.Balance == c.Balance && b.Check == c.Check &&
		b.SendProxyV2 == c.SendProxyV2 && b.TimeoutConnect == c.TimeoutConnect && b.TimeoutServer == c.TimeoutServer &&
		b.TrackNodes == c.TrackNodes && b.Affinity == c.Affinity && b.HTTP == c.HTTP && b.H2C == c.H2C && b.TLS.SameStructure(c.TLS) && b.Cookie.Equal(c.Cookie) &&
		b.RetryOn == c.RetryOn && b.Retries == c.Retries && b.RetryIdempotent == c.RetryIdempotent && b.SourceChecked == c.SourceChecked && b.Slots == c.Slots
}

// Structure returns a copy of b without servers: the part of a backend that
// can only change through a reload.
func (b *Backend) Structure() Backend {
	c := *b
	c.Servers = nil
	return c
}

// Slot is one server line of a backend. Backends carry a few more
// slots than servers so that servers can come and go through the Runtime
// API without a reload. A slot that is not Used is in maintenance; its
// Server then holds at most the address it last pointed at (never Drain
// or Maint). The i-th slot (0-based) is named SlotName(i), by its place.
//
// In a backend with TrackNodes, Track is 1 + the index of the slot of the
// NodesBackend whose state this slot follows (0 for none: a small number
// next to Used costs the Slot no space, which matters at tens of
// thousands of slots). It is part of the
// configuration: a slot keeps it until the next reload, and may only take
// servers of that node meanwhile. A slot with no Track holds a server of
// any node, and then carries the node's state itself (Server.Maint).
//
// Held marks a free slot of the NodesBackend that may take back only the
// node whose address it remembers, not another node, until the next
// reload (plan.Assign without resize honours it, with resize drops it):
// the Data Plane API driver holds a deleted node's slot while servers
// that follow it may still be in service of their own (it cannot put
// them in maintenance while their node is).
type Slot struct {
	Used   bool
	Held   bool
	Track  uint16
	Server Server
}

// WantMaint reports whether the slot must be in maintenance of its own:
// free, or holding a server out of service that does not follow its node
// (a slot that follows inherits the node's maintenance instead).
func (s Slot) WantMaint() bool { return !s.Used || (s.Server.Maint && s.Track == 0) }

// Layout maps a backend name to its slots, in order.
type Layout map[string][]Slot

// SlotName is the name of the i-th (0-based) slot of a backend.
func SlotName(i int) string {
	if i >= 0 && i < len(slotNames) {
		return slotNames[i] // shared: layouts hold tens of thousands of slots
	}
	return "s" + strconv.Itoa(i+1)
}

var slotNames = func() []string {
	out := make([]string, 256)
	for i := range out {
		out[i] = "s" + strconv.Itoa(i+1)
	}
	return out
}()

// SameSlice reports whether a and b are the very same slice: same length
// and the same first element in memory. The desired package hands out the
// same slices for what did not change between passes, and the plan and the
// driver rely on it to skip comparing them.
func SameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// FrontendsSorted reports whether fs is sorted by name, each name once,
// as a Config's are: the memos that walk two passes' frontends side by
// side check it, and take a Config that is not so whole.
func FrontendsSorted(fs []Frontend) bool {
	// One walk, each name strictly after the last (sorted, none twice):
	// several memos ask it of 10,000 frontends every pass (issue 29).
	for i := 1; i < len(fs); i++ {
		if fs[i-1].Name >= fs[i].Name {
			return false
		}
	}
	return true
}

// BackendsSorted is FrontendsSorted for backends.
func BackendsSorted(bs []*Backend) bool {
	for i := 1; i < len(bs); i++ {
		if bs[i-1].Name >= bs[i].Name {
			return false
		}
	}
	return true
}
