// Package ingress is the Ingress source's pure part: IngressClasses,
// Ingresses (networking.k8s.io/v1), the Services and EndpointSlices they
// name and the certificates of their TLS Secrets in, the same HTTP model
// HTTPRoutes compile into (model.HTTP tables on an HTTP and an HTTPS
// frontend, model.TLS, backends of Pod servers) out, with the Events and
// status each Ingress should carry. Compile reads nothing else and
// changes nothing it is given; Merge puts its frontends beside (or into)
// the gateway mode's. docs/ingress.md says what is served and how.
package ingress

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// ControllerName is the IngressClass spec.controller this controller
// serves.
const ControllerName = "haproxy-k8s-sync.io/ingress"

// Annotations of the Ingress API itself.
const (
	// ClassAnnotation is the class an Ingress asks for, before
	// spec.ingressClassName existed.
	ClassAnnotation = "kubernetes.io/ingress.class"
	// DefaultClassAnnotation marks the IngressClass of the Ingresses
	// that name none.
	DefaultClassAnnotation = "ingressclass.kubernetes.io/is-default-class"
)

// Key is a namespace/name.
type Key struct{ Namespace, Name string }

func (k Key) String() string { return k.Namespace + "/" + k.Name }

// Input is everything Compile reads. Objects are shared with the
// informer caches: never modified.
type Input struct {
	Classes   []*netv1.IngressClass
	Ingresses []*netv1.Ingress
	Services  []*corev1.Service
	Slices    []*desired.Slice
	// Certs are the checked bundles of the TLS Secrets the Ingresses
	// name (and the default certificate's); a Secret missing here is
	// missing or holds no valid certificate, and Problems says why.
	Certs    map[Key]*certs.Bundle
	Problems map[Key]string
	// Auth are the htpasswd files (key AuthKey, at most MaxAuthFile
	// bytes) of the Secrets not of type kubernetes.io/tls that have one.
	Auth map[Key][]byte
	// CAs are the checked CA bundles (key CAKey) of the Secrets that
	// have one, for backend TLS; CAProblems says why a ca.crt is not.
	CAs        map[Key][]byte
	CAProblems map[Key]string
	// ConfigMaps are the ConfigMaps the Ingresses' custom-headers name
	// (customheaders.go), with their header data only (HeaderData).
	ConfigMaps map[Key]*corev1.ConfigMap
}

// Options shape Compile.
type Options struct {
	// Class is the IngressClass name served (--ingress-class): Ingresses
	// naming it (spec.ingressClassName or the old annotation) are ours
	// when an IngressClass of that name names ControllerName, or, for the
	// annotation, when no IngressClass of that name exists; an Ingress
	// naming no class is ours when that IngressClass is the default one.
	// "": every IngressClass naming ControllerName.
	Class string
	// Addresses are the binds' addresses (every local address when
	// empty), and what status.loadBalancer.ingress says.
	Addresses []netip.Addr
	// Own: Addresses are the class's own, from an AddressPool
	// (ingressctl): bound transparent (the host need not hold them yet),
	// and the HTTP frontend is there while no Ingress is served, so the
	// first Ingress is map data, no reload.
	Own bool
	// HTTPPort and HTTPSPort are the frontends' ports (80 and 443 when 0).
	HTTPPort, HTTPSPort uint16
	// DefaultCert is the Secret served to clients naming no host of a
	// certificate (--ingress-default-certificate); zero: the first
	// certificate by name.
	DefaultCert Key
	// ProxySetHeaders and AddHeaders are ConfigMaps of request and
	// response headers every path carries (--ingress-proxy-set-headers,
	// --ingress-add-headers: globalheaders.go); zero: none.
	ProxySetHeaders, AddHeaders Key
	// ConnectPerRequest: the HAProxy served sets a connect timeout per
	// request (3.4+, haproxy.Version.ConnectPerRequest): a connect
	// timeout annotation is the path's map data (model.HTTPActionExt's
	// Connect), not backends of its own (connect.go). The same for the
	// Memo's whole life.
	ConnectPerRequest bool
	// Last keeps each Ingress's last good object across passes: an
	// Ingress whose new version is refused keeps serving it. nil: no
	// memory.
	Last *Memo
}

// Result is the model of the served Ingresses and what to tell them.
// Its maps and slices may be shared with the memo (Options.Last) and
// with the Results of other passes: not to be modified.
type Result struct {
	Frontends []model.Frontend // the HTTP frontend, and the HTTPS one when a certificate resolves
	Backends  []*model.Backend
	// Served are the Ingresses of our class whose rules are in the
	// frontends (a refused one served from its last good version too),
	// with the addresses their status should list.
	Served map[Key][]netip.Addr
	Events []Event
	// ConfigMapEvents are Warnings to record on ConfigMaps the options
	// name (Event.Ingress is the ConfigMap's key: globalheaders.go).
	ConfigMapEvents []Event
	// Annotations counts the Ingresses carrying each annotation key not
	// honoured, by verdict (Unsupported, Refused).
	Annotations map[Verdict]map[string]int
}

// Event is a Warning to record on an Ingress.
type Event struct {
	Ingress Key
	Reason  string
	Message string
}

// Memo remembers the last good version of each Ingress, across passes.
// The caller owns it; one pass at a time.
type Memo struct {
	last map[Key]*netv1.Ingress
	// units are the Ingresses compiled, by object (unitmemo.go).
	units, next map[Key]*memoUnit
	hits        int // Ingresses not compiled again, in all (tests)
	// pass is the last pass, for the next to patch (passmemo.go); nil:
	// the next is a whole pass.
	pass    *passState
	patched int    // passes patched, in all (tests)
	why     string // why the last Compile was a whole pass (Whole)
	// unrecorded: why the last whole pass was not kept to patch.
	unrecorded string
	// headers are the last valid version of each ConfigMap of
	// custom-headers a kept Ingress names (customheaders.go).
	headers map[Key]lastHeaders
	// global is the last pass's controller-wide headers, globalKeys the
	// ConfigMaps they are read from (globalheaders.go).
	global     *globalHeaders
	globalKeys []Key
}

func (m *Memo) get(k Key) *netv1.Ingress {
	if m == nil {
		return nil
	}
	return m.last[k]
}

func (m *Memo) keep(seen map[Key]*netv1.Ingress) {
	if m != nil {
		m.last = seen
		m.units, m.next = m.next, nil
		m.pruneHeaders(seen) // customheaders.go
	}
}

// Compile turns the Ingresses of our class into frontends and backends.
func Compile(in Input, opts Options) Result {
	if opts.HTTPPort == 0 {
		opts.HTTPPort = 80
	}
	if opts.HTTPSPort == 0 {
		opts.HTTPSPort = 443
	}
	if res, ok := opts.Last.patch(in, opts); ok { // passmemo.go
		return res
	}
	res := Result{Served: map[Key][]netip.Addr{}, Annotations: map[Verdict]map[string]int{}}
	w := newWorld(in)
	w.res, w.memo, w.connectReq = &res, opts.Last, opts.ConnectPerRequest
	w.resolveGlobal(opts, &res) // globalheaders.go
	isOurs := classFilter(in, opts.Class)
	ours := ourIngresses(in, isOurs)
	good := map[Key]*netv1.Ingress{}
	var units []*unit
	anyRefused := false
	for _, ing := range ours {
		k := Key{ing.Namespace, ing.Name}
		u, refused := opts.Last.compile(ing, w, &res) // unitmemo.go
		if refused != "" {
			anyRefused = true
			last := opts.Last.get(k)
			var prev *unit
			if last != nil {
				prev, _ = compileOne(last, w, nil)
			}
			if prev == nil {
				res.Events = append(res.Events, Event{k, "Refused", refused + "; the Ingress is not served"})
				continue
			}
			res.Events = append(res.Events, Event{k, "Refused", refused + "; its last good version keeps serving"})
			good[k] = last
			units = append(units, prev)
			res.Served[k] = opts.Addresses
			continue
		}
		good[k] = ing
		units = append(units, u)
		res.Served[k] = opts.Addresses
	}
	opts.Last.keep(good)
	tb := build(&res, units, w, opts)
	opts.Last.record(in, opts, isOurs, units, anyRefused, tb, w, res)
	return res
}

// ourIngresses are the Ingresses of in that ours says are of our
// class, oldest first (namespace/name on ties): the order that breaks
// precedence ties.
func ourIngresses(in Input, ours func(*netv1.Ingress) bool) []*netv1.Ingress {
	var out []*netv1.Ingress
	for _, ing := range in.Ingresses {
		if ours(ing) {
			out = append(out, ing)
		}
	}
	slices.SortFunc(out, func(a, b *netv1.Ingress) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// classFilter reports whether an Ingress is of our class, with in's
// IngressClasses.
func classFilter(in Input, class string) func(*netv1.Ingress) bool {
	classes := map[string]*netv1.IngressClass{}
	defaultOurs := false
	for _, c := range in.Classes {
		classes[c.Name] = c
		if c.Spec.Controller == ControllerName && c.Annotations[DefaultClassAnnotation] == "true" && (class == "" || c.Name == class) {
			defaultOurs = true
		}
	}
	return func(ing *netv1.Ingress) bool {
		if a, ok := ing.Annotations[ClassAnnotation]; ok {
			// The old annotation wins over spec.ingressClassName, as
			// the controllers that read both do; it may name a class
			// that has no IngressClass object.
			c, exists := classes[a]
			if class == "" {
				return exists && c.Spec.Controller == ControllerName
			}
			return a == class && (!exists || c.Spec.Controller == ControllerName)
		}
		if n := ing.Spec.IngressClassName; n != nil {
			c, exists := classes[*n]
			return exists && c.Spec.Controller == ControllerName && (class == "" || *n == class)
		}
		return defaultOurs
	}
}

// world indexes what Ingresses refer to.
type world struct {
	services map[Key]*corev1.Service
	slices   map[Key][]*desired.Slice
	in       Input
	backends map[string]*model.Backend
	res      *Result
	rec      *memoUnit      // what compileOne reads and tells, while it is memoised
	memo     *Memo          // nil: none
	global   *globalHeaders // the controller-wide headers (globalheaders.go); nil: none
	// connectReq: a connect timeout is set per request
	// (Options.ConnectPerRequest, connect.go).
	connectReq bool
}

// event records a Warning on an Ingress.
func (w *world) event(k Key, reason, msg string) {
	w.res.Events = append(w.res.Events, Event{k, reason, msg})
}

func newWorld(in Input) *world {
	w := &world{services: map[Key]*corev1.Service{}, slices: map[Key][]*desired.Slice{}, in: in, backends: map[string]*model.Backend{}}
	for _, s := range in.Services {
		w.services[Key{s.Namespace, s.Name}] = s
	}
	for _, s := range in.Slices {
		if s.Service != "" {
			k := Key{s.Namespace, s.Service}
			w.slices[k] = append(w.slices[k], s)
		}
	}
	return w
}

// variant is what an Ingress's annotations make of its backends: each
// setting that is structure makes a backend of its own, named by it.
type variant struct {
	h2c       bool              // backend-protocol (routing.go)
	tls       *model.BackendTLS // backendtls.go
	tlsTag    string
	cookie    *model.CookieAffinity // cookie.go
	cookieTag string
	retryOn   string // retry.go
	retries   int
	retryIdem bool
	retryTag  string
	connect   time.Duration // connect.go; 0: the defaults'
	balance   string        // hashby.go; "": roundrobin
	upstream  bool          // upstream.go
	tcp       bool          // ssl-passthrough (passthrough.go): mode tcp
}

// backend is the model backend of an Ingress backend (a Service port),
// added to w.backends (one of its own, suffixed h2c, when the Ingress
// says the port speaks HTTP/2: backend-protocol; suffixed by its TLS
// settings when it speaks TLS: backendtls.go, and by its cookie:
// cookie.go, by its retry policy: retry.go, and by its connect timeout:
// connect.go); "" and why when it does not resolve.
func (w *world) backend(ns string, b *netv1.IngressBackend, v variant) (string, string) {
	if b.Service == nil {
		return "", "backend.resource is not supported (a Service only)"
	}
	k := Key{ns, b.Service.Name}
	svc, ok := w.services[k]
	if !ok {
		return "", "Service " + k.String() + " not found"
	}
	var port *corev1.ServicePort
	for i, p := range svc.Spec.Ports {
		if (b.Service.Port.Name != "" && p.Name == b.Service.Port.Name) || (b.Service.Port.Name == "" && p.Port == b.Service.Port.Number) {
			port = &svc.Spec.Ports[i]
		}
	}
	if port == nil || (port.Protocol != "" && port.Protocol != corev1.ProtocolTCP) {
		want := b.Service.Port.Name
		if want == "" {
			want = strconv.Itoa(int(b.Service.Port.Number))
		}
		return "", "Service " + k.String() + " has no TCP port " + want
	}
	parts := []string{ns, svc.Name, strconv.Itoa(int(port.Port))}
	if v.h2c {
		parts = append(parts, "h2c")
	}
	if v.tls != nil {
		parts = append(parts, v.tlsTag)
	}
	if v.cookie != nil {
		parts = append(parts, v.cookieTag)
	}
	if v.retryOn != "" {
		parts = append(parts, v.retryTag)
	}
	if t := connectTag(v.connect); t != "" {
		parts = append(parts, t)
	}
	balance := "roundrobin"
	if v.balance != "" {
		balance = v.balance
		parts = append(parts, "h", v.balance) // model.Name keeps only its characters
	}
	servers := desired.PodServers(w.slices[k], *port)
	if v.upstream {
		var why string
		if servers, why = clusterServer(svc, *port); why != "" { // upstream.go
			return "", why
		}
		parts = append(parts, "u")
	}
	if v.tcp {
		parts = append(parts, "t")
	}
	n := model.Name("ing", parts...)
	if _, ok := w.backends[n]; !ok && v.tcp {
		w.backends[n] = &model.Backend{Name: n, Service: k.String(), Balance: balance, Servers: servers}
	} else if !ok {
		w.backends[n] = &model.Backend{Name: n, Service: k.String(), Balance: balance, HTTP: true, H2C: v.h2c, TLS: v.tls,
			Cookie: v.cookie, RetryOn: v.retryOn, Retries: v.retries, RetryIdempotent: v.retryIdem, TimeoutConnect: v.connect, Servers: servers}
	}
	return n, ""
}
