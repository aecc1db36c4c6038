// Package desired computes, from Kubernetes objects, the HAProxy model that
// should run. Compute is a pure function of its input: the controller calls
// it with the whole world on every pass, and `render` calls it offline.
package desired

import (
	"net/netip"
	"regexp"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// DefaultClass is the spec.loadBalancerClass this controller owns by default.
const DefaultClass = "haproxy-k8s-sync.io/lb"

// ExcludeLabel takes a node out of every load balancer when present.
const ExcludeLabel = "node.kubernetes.io/exclude-from-external-load-balancers"

// Targets selects what servers point at.
const (
	TargetNodes = "nodes" // node InternalIP : nodePort
	TargetPods  = "pods"  // endpoint address : target port
)

// Options are the controller-wide choices that shape the model.
type Options struct {
	Class     string            // loadBalancerClass to take
	ClassLess bool              // also take LoadBalancer Services without a class
	Service   string            // "namespace/name": single-Service mode when set
	Backend   string            // single-Service mode: backend name instead of the generated one
	Targets   string            // TargetNodes or TargetPods
	Binds     []netip.Addr      // listen addresses; none means all
	Defaults  settings.Settings // settings before annotations
	// TrackNodes lets the servers of Services without a check of their
	// own (see ownCheck) follow their node's state
	// (model.Backend.TrackNodes) in node mode.
	TrackNodes bool
	// UDP: UDP ports become model.Config.UDP (the kernel's load
	// balancer). Otherwise they are skipped with an UnsupportedProtocol
	// problem that gives UDPOff as the reason.
	UDP    bool
	UDPOff string
	// NodeCheck is the health check of each node's server in the
	// model.NodesBackend (disabled: none); the servers that follow their
	// node go down with it. With TrackNodes, it makes the servers of
	// Services with check auto follow their node (ownCheck).
	NodeCheck model.Check
	// CarryNodeCheck: servers that would follow their node but cannot
	// (TrackNodes off: the Data Plane API's single-Service mode, whose
	// backend is the operator's and has no model.NodesBackend to follow)
	// carry NodeCheck themselves, each checked on its node's address at
	// the node check's port (and path), as an unbound slot of a following
	// backend does (carriesNodeCheck).
	CarryNodeCheck bool
	// LocalHealthCheck checks the servers of Local Services in node mode
	// (check true or auto) on kube-proxy's per-Service health check,
	// spec.healthCheckNodePort (GET / answers 200 while the node has a
	// ready local endpoint), instead of their own port, as cloud load
	// balancers do. A backend-port setting keeps the own port.
	LocalHealthCheck bool
	// Pooled: Services listen on their own addresses (Input.Addresses,
	// from the AddressPools) instead of Binds; one without an address
	// is not configured (it waits for one).
	Pooled bool
	// SharedListener: --listeners=tproxy, where the Services on addresses
	// of their own share one listener; one asking for its own maxconn or
	// client timeout gets a warning (listeners.go).
	SharedListener bool
}

// Input is the world one pass looks at.
type Input struct {
	Services []*corev1.Service
	Slices   []*Slice
	Nodes    []*corev1.Node
	// LastGood holds, per "namespace/name", the settings of the last pass
	// in which the Service's annotations were valid (read only: a Service
	// that keeps them shares the object in Result.Good).
	LastGood map[string]*settings.Settings
	// Memo, when set, saves work between passes; it does not change the
	// result. The caller keeps it from one pass to the next.
	Memo *Memo
	// Addresses are the Services' own addresses by "namespace/name"
	// (with Options.Pooled), from pools.Allocate.
	Addresses map[string][]netip.Addr
}

// Event reasons of Problems.
const (
	ReasonInvalidAnnotation   = "InvalidAnnotation"
	ReasonPortConflict        = "PortConflict"
	ReasonUnsupportedProtocol = "UnsupportedProtocol"
	ReasonNoNodePort          = "NoNodePort"
	ReasonUnsupportedBalance  = "UnsupportedBalance"
)

// Problem is something wrong with one Service, to report as an Event.
type Problem struct {
	Service *corev1.Service
	Reason  string
	Message string
}

// Result is the outcome of one pass.
type Result struct {
	Config model.Config
	// FrontChanges, when set, says which frontends Config added, removed
	// or replaced against the last pass's (a delta pass, delta.go); nil:
	// unknown. A value of this pass, handed to the driver beside Config
	// (driver.WithFrontChanges); ignoring it is always correct.
	FrontChanges *model.FrontendChanges
	// Good is the next pass's LastGood. Its values are shared, never
	// changed: the memo's one object for equal settings, or LastGood's own
	// (a map of 10,000 settings by value was 2.25 MB, issue 29's peak).
	Good map[string]*settings.Settings
	// GoodEdited: Good is the last pass's map, with the keys of the
	// Services that came or went added and removed in place (delta.go;
	// copying 10,000 entries was half of such a pass's allocations, issue
	// 29). A memoised pass's Good may thus change in a later pass: a
	// caller that keeps it past the next pass, or reads it on another
	// goroutine, asks for copies meanwhile (Memo.CopyGood).
	GoodEdited bool
	Problems   []Problem
	Selected   int // Services taken
	// Configured lists the Services with at least one frontend, in the
	// order they were considered.
	Configured []*corev1.Service
	// ServersOnly: the memo served this pass by recomputing only the
	// servers of the Services an endpoint or node change touched.
	ServersOnly bool
	// NotReadyKept names the nodes that serve though NotReady, because
	// no node that is not excluded is Ready (fail open: nodeAddrs);
	// empty otherwise.
	NotReadyKept []string
	// Skipped names each node InternalIP and endpoint address that is no
	// server (unparsable, unspecified, multicast, broadcast, zoned),
	// sorted, for the caller to log or print: none vanishes silently.
	Skipped []string
}

// backendName is what a single-Service backend override must look like.
var backendName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)

// ValidBackendName reports whether n may be used as a backend name.
func ValidBackendName(n string) bool { return backendName.MatchString(n) }

// Compute builds the model for in.
func Compute(in Input, opts Options) Result {
	nodes, kept := nodeAddrs(in.Nodes)
	res := compute(in, opts, nodes)
	res.NotReadyKept = kept
	res.Skipped = skippedAddresses(in.Nodes, in.Slices)
	return res
}

func compute(in Input, opts Options, nodes map[string]nodeInfo) Result {
	memo := in.Memo
	memo.begin(opts, nodes)
	if opts.Pooled {
		memo.setAddresses(in.Addresses)
	}
	bySvc := memo.slicesByService(in.Slices)

	svcs, ok := memo.candidates(in.Services)
	delta := false // a few Services came or went (delta.go)
	var fronts *model.FrontendChanges
	if !ok && memo.servicesDelta(in.Services, opts, nodes, bySvc, in.Addresses) {
		svcs, ok, delta = memo.sorted, true, true
		fronts, memo.frontDelta = memo.frontDelta, nil // the frontends it added and removed
	}
	var optIn []Problem // Services the enabled annotation fails to opt in
	if ok {
		optIn = memo.optIn
	}
	if ok {
		if res, fast := memo.serversOnly(opts, bySvc); fast {
			if delta { // frontends and backends came or went
				res.ServersOnly, res.Config.Changes, res.GoodEdited = false, nil, !memo.goodCopy
				res.FrontChanges = fronts
			}
			return withUDP(res, memo.udpCandidates(svcs), opts, nodes, bySvc, in.Addresses)
		}
	}
	defer memo.end()
	defer memo.clearDirty()
	if !ok {
		svcs = make([]candidate, 0, len(in.Services))
		for _, s := range in.Services {
			if selected(s, opts) {
				svcs = append(svcs, candidate{s, key(s)})
			}
		}
		slices.SortFunc(svcs, byAge)
		optIn = badOptIns(in.Services, opts)
		memo.setCandidates(in.Services, svcs)
		if memo != nil {
			memo.optIn = optIn
		}
	}
	// With the same Services as the last pass, all of them memoised then,
	// Good is the last pass's map and the frontends are the last pass's
	// (they depend only on the Services and their settings).
	reuseGood := ok && memo.goodAllMemo && memo.good != nil
	allMemo := true
	res := Result{Problems: slices.Clip(optIn)}
	if reuseGood {
		res.Good = memo.good
	} else {
		res.Good = make(map[string]*settings.Settings, len(svcs))
	}
	res.Selected = len(svcs)

	ports := 0
	for _, c := range svcs {
		ports += len(c.svc.Spec.Ports)
		if len(c.svc.Spec.IPFamilies) > 1 {
			ports += len(c.svc.Spec.Ports) // perhaps a frontend per family
		}
	}
	if !reuseGood {
		res.Config.Frontends = make([]model.Frontend, 0, ports)
	}
	// The backends live in one array; the Config holds pointers to them.
	// Backends are shared with later passes from here on: never modified
	// once in a Config (a pass that changes one copies it).
	store := make([]model.Backend, 0, ports)
	var owners []*memoPort // the memo's port of each frontend appended (pointFrontends)
	if memo != nil && !reuseGood {
		owners = make([]*memoPort, 0, ports)
	}
	res.Config.Backends = make([]*model.Backend, 0, ports)
	claimed := make(map[claim]string)
	valid := true // every Service's annotations are valid
	for _, cand := range svcs {
		svc, k := cand.svc, cand.key
		eps := bySvc[k]
		e := memo.entry(svc, k, eps)
		var set settings.Settings
		var setp *settings.Settings // what Good holds: the memo's shared object, or the last good one
		var bad *badSettings
		if e == nil || !e.ready {
			allMemo = false
			if wrong := invalidService(svc); len(wrong) > 0 { // a memoised Service passed this
				valid = false
				memo.drop(svc)
				res.Problems = append(res.Problems, Problem{svc, ReasonInvalidService, joinLines(wrong) + "; the Service is not configured"})
				continue
			}
		}
		switch {
		case e != nil && e.ready:
			setp = e.set
			set = *setp
		case e != nil && e.bad != nil:
			bad = e.bad // the same object: the same errors
		default:
			var errs []error
			set, errs = serviceSettings(opts.Defaults, svc)
			switch {
			case len(errs) > 0:
				bad = &badSettings{msg: joinErrors(errs), reason: settingsReason(errs)}
				if e != nil {
					e.bad = bad
				}
			case e != nil:
				e.init(memo.shared(set), len(svc.Spec.Ports), nil)
				setp = e.set
			}
		}
		if bad != nil {
			valid = false
			e = nil // the entry holds the errors only
			last, ok := in.LastGood[k]
			if !ok {
				res.Problems = append(res.Problems, Problem{svc, bad.reason, bad.msg + "; the Service is not configured until this is fixed"})
				continue
			}
			res.Problems = append(res.Problems, Problem{svc, bad.reason, bad.msg + "; keeping the last good settings"})
			set, setp = *last, last
		}
		if !reuseGood {
			if setp == nil { // no memo: an object of its own
				setp = new(set)
			}
			res.Good[k] = setp
		}
		if pooled(svc, opts) && len(in.Addresses[k]) == 0 {
			continue // no address (yet): the allocation's Event says why
		}
		configured := false
		nf := 0 // frontends per port: 1, or 2 for a Service split by family
		for i, p := range svc.Spec.Ports {
			if p.Protocol == corev1.ProtocolUDP {
				continue // the UDP part of the model: withUDP
			}
			if p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
				res.Problems = append(res.Problems, Problem{svc, ReasonUnsupportedProtocol,
					"port " + portLabel(p) + ": protocol " + settings.ShowName(string(p.Protocol)) + " is not supported yet; only TCP ports are load balanced"})
				continue
			}
			groups := groupsOf(svc, bindsFor(svc, p.Port, in.Addresses[k], opts))
			if nf == 0 {
				nf = len(groups)
				if e != nil && len(e.fams) != nf {
					e.init(memo.shared(set), len(svc.Spec.Ports), groups)
				}
			}
			for g, grp := range groups {
				mp := (*memoPort)(nil)
				if e != nil {
					mp = &e.ports[i*nf+g]
				}
				if owner := taken(claimed, grp.binds); owner != "" {
					res.Problems = append(res.Problems, Problem{svc, ReasonPortConflict,
						"port " + strconv.Itoa(int(p.Port)) + " is already used by Service " + settings.ShowName(owner) + "; this port is not configured"})
					continue
				}
				var servers []model.Server
				var ok bool
				if mp != nil && mp.haveServers {
					servers, ok = mp.servers, mp.ok
				} else {
					servers, ok = serversFor(svc, p, set, opts, nodes, eps, grp.fam)
					if mp != nil {
						if !e.tracked {
							memo.track(e, svc, eps)
							e.tracked = true
						}
						mp.haveServers, mp.servers, mp.ok = true, servers, ok
					}
				}
				if !ok {
					res.Problems = append(res.Problems, Problem{svc, ReasonNoNodePort,
						"port " + portLabel(p) + " has no nodePort; set the backend-port annotation or use --targets=pods"})
					break
				}
				claimAll(claimed, grp.binds, k)
				var fe model.Frontend
				var bp *model.Backend
				if mp != nil && mp.haveProxies {
					fe, bp = *mp.fe, mp.backend(servers)
				} else {
					var be model.Backend
					fe, be = proxies(svc, k, p, set, opts, len(svc.Spec.Ports) > 1, grp)
					be.Servers = servers
					if mp != nil {
						// Its own object, not in store: the memo keeps it
						// past this pass, and would keep store's whole array.
						kept := be // only this copy escapes, not be
						mp.haveProxies, mp.be = true, &kept
						if reuseGood { // else the frontend in the Result's array (pointFrontends)
							keptFe := fe
							mp.fe = &keptFe
						}
						bp = mp.be
					} else {
						store = append(store, be) // never grows: ports is enough
						bp = &store[len(store)-1]
					}
				}
				if !reuseGood {
					res.Config.Frontends = append(res.Config.Frontends, fe)
					if owners != nil {
						owners = append(owners, mp)
					}
				}
				res.Problems = append(res.Problems, listenerProblem(svc, fe, opts)...)
				res.Config.Backends = append(res.Config.Backends, bp)
				configured = true
			}
		}
		if configured {
			res.Configured = append(res.Configured, svc)
		}
	}
	if len(res.Config.Backends) == 0 { // one frontend per backend
		res.Config.Frontends, res.Config.Backends = nil, nil // as when nothing was appended
	}
	var feOrder, beOrder *sortCache
	if memo != nil {
		feOrder, beOrder = &memo.feOrder, &memo.beOrder
	}
	var feOwners []*memoPort
	if reuseGood {
		res.Config.Frontends, feOwners = memo.frontends, memo.feOwners
	} else {
		var order []int32
		res.Config.Frontends, order = sortedByName(res.Config.Frontends, func(f *model.Frontend) string { return f.Name }, feOrder)
		feOwners = pointFrontends(res.Config.Frontends, order, owners)
	}
	res.Config.Backends, _ = sortedByName(res.Config.Backends, func(b **model.Backend) string { return (*b).Name }, beOrder)
	res.Config.Backends = withNodes(res.Config.Backends, nodes, opts.NodeCheck, memo)
	if memo != nil {
		memo.good, memo.goodAllMemo = res.Good, allMemo
		memo.frontends, memo.feOwners, memo.claimed = res.Config.Frontends, feOwners, claimed
		memo.remember(res, svcs, valid)
	}
	return withUDP(res, memo.udpCandidates(svcs), opts, nodes, bySvc, in.Addresses)
}
