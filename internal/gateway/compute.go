package gateway

import (
	"cmp"
	"net/netip"
	"slices"
	"strconv"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// features are the GatewayClass's supportedFeatures, sorted by name;
// pooledFeatures are added with --address-pools (Options.Pooled): a
// Gateway's spec.addresses are then served (GatewayStaticAddresses), and
// one of type IPAddress without a value gets a pool's address
// (GatewayAddressEmpty).
var (
	features = slices.Sorted(slices.Values(append([]gwv1.FeatureName{"Gateway", "HTTPRoute", "HTTPRoute303RedirectStatusCode", "HTTPRoute307RedirectStatusCode",
		"HTTPRoute308RedirectStatusCode", "HTTPRouteMethodMatching", "HTTPRouteParentRefPort", "HTTPRoutePortRedirect", "HTTPRouteSchemeRedirect",
		"ReferenceGrant", "TCPRoute", "TLSRoute", "UDPRoute"}, slices.Concat(extFeatures, grpcFeatures, tlsFeatures, frontendFeatures, listenerSetFeatures)...)))
	pooledFeatures = []gwv1.FeatureName{"GatewayAddressEmpty", "GatewayStaticAddresses"}
)

// gw is a Gateway of ours being computed.
type gw struct {
	obj       *gwv1.Gateway
	key       Key
	addrs     []netip.Addr // bind addresses; empty: every address
	addrOK    bool         // spec.addresses can be served
	addrWhy   string       // the reason when not
	addrMsg   string       // its message ("": the reason's usual one)
	pooled    bool         // addrs are from the AddressPools: bound transparent
	listeners []*listener  // its own, then its ListenerSets' entries
	sets      []*lset      // the ListenerSets naming it (listenerset.go)
}

// Compute builds the model and the statuses for in.
func Compute(in Input, opts Options) Result {
	if opts.ControllerName == "" {
		opts.ControllerName = ControllerName
	}
	res := Result{Classes: map[string]gwv1.GatewayClassStatus{}, Gateways: map[Key]gwv1.GatewayStatus{}, ListenerSets: map[Key]gwv1.ListenerSetStatus{}}
	accepted := map[string]bool{}
	for _, c := range in.Classes {
		if string(c.Spec.ControllerName) != opts.ControllerName {
			continue
		}
		st := gwv1.GatewayClassStatus{}
		if c.Spec.ParametersRef != nil {
			st.Conditions = []metavCondition{cond("Accepted", false, "InvalidParameters", "this controller takes no parameters", c.Generation)}
		} else {
			accepted[c.Name] = true
			st.Conditions = []metavCondition{cond("Accepted", true, "Accepted", "handled by "+opts.ControllerName, c.Generation)}
			fs := features
			if opts.Pooled {
				fs = append(slices.Clone(fs), pooledFeatures...)
				slices.Sort(fs)
			}
			for _, f := range fs {
				st.SupportedFeatures = append(st.SupportedFeatures, gwv1.SupportedFeature{Name: f})
			}
		}
		res.Classes[c.Name] = st
	}

	w := newWorld(in)
	w.memo = opts.Memo // memo.go
	opts.Memo.begin(in)
	opts.Memo.tell(in.HTTPRouteChanges) // routechanges.go
	opts.Memo.moved(w)
	opts.Certs.begin()
	defer opts.Certs.end()
	opts.CAs.beginClients() // clientauth.go
	defer opts.CAs.endClients()
	var gws []*gw
	byKey := map[Key]*gw{}
	sorted := slices.Clone(in.Gateways)
	slices.SortFunc(sorted, func(a, b *gwv1.Gateway) int {
		return older(&a.ObjectMeta, &b.ObjectMeta, a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	taken := map[portKey]Key{} // a port bound by an older Gateway
	lsets := listenerSetsByParent(in.ListenerSets)
	var ours []*gwv1.Gateway
	for _, g := range sorted {
		if accepted[string(g.Spec.GatewayClassName)] {
			ours = append(ours, g)
		}
	}
	var pooled map[Key]gwAddrs
	if opts.Pooled {
		var asking []*gwv1.Gateway // those whose address types we support
		for _, g := range ours {
			if _, _, why := gatewayAddrs(g, nil); why != "UnsupportedAddress" {
				asking = append(asking, g)
			}
		}
		pooled, res.Assigned, res.Others = allocate(asking, in, opts)
	}
	for _, g := range ours {
		x := &gw{obj: g, key: Key{g.Namespace, g.Name}}
		x.addrs, x.addrOK, x.addrWhy = gatewayAddrs(g, opts.Addresses)
		if a, ok := pooled[x.key]; ok {
			x.addrs, x.addrOK, x.addrWhy, x.addrMsg, x.pooled = a.addrs, a.why == "", a.why, a.msg, true
		}
		x.listeners = listenersOf(g, opts.UDP)
		w.addListenerSets(x, lsets[x.key], opts.UDP) // listenerset.go
		for _, l := range x.listeners {
			w.certRefs(g, l)
			l.tls = w.listenerTLS(g, l, opts.Certs)
			w.clientAuth(g, l, opts.CAs) // clientauth.go
			if l.statusOnly() {
				continue // binds nothing
			}
			pk := portKey{udp: l.udp(), port: l.port}
			if x.pooled {
				// Its own addresses (or shared without a port clash,
				// pools.Allocate saw to it): no other Gateway's port.
				continue
			}
			if owner, ok := taken[pk]; ok && owner != x.key && l.accepted {
				l.reject("PortUnavailable", "port "+strconv.Itoa(int(l.port))+" is taken by Gateway "+owner.String())
			} else if l.accepted && x.addrOK {
				taken[pk] = x.key
			}
		}
		gws = append(gws, x)
		byKey[x.key] = x
	}

	w.resolveBackendTLS(in, opts.CAs)
	w.clientCerts, w.certMemo = map[Key]*clientCert{}, opts.Certs // backendcert.go
	opts.Routes.begin()
	defer opts.Routes.end()
	w.indexListeners(gws) // attachmemo.go
	rs := httpRoutes(opts.Memo.routesBuf(), in, opts.Memo)
	sb := routeStatusBuild{s: opts.Memo.lastStatus()}         // routestatuses.go: the last result's, copied where it changes
	if !w.spliceRoutes(in, byKey, opts.ControllerName, &sb) { // splice.go: the last pass's lists, a few routes changed
		w.startLists()
		rs = routesOf(in, rs, opts.Routes, opts.Memo)
		for _, r := range rs {
			sts := w.attached(r, byKey, opts.ControllerName)
			if opts.Memo.noteRoute(r, sts) { // routesdelta.go
				sb.put(r.key, sts)
			}
		}
		opts.Memo.gone(rs, &sb)
		opts.Memo.notedAll()
	}
	res.Routes = sb.done()
	opts.Memo.keepRoutesBuf(rs)

	backends := make(map[string]*model.Backend, len(in.Services)) // about one per Service port: grown no more
	for _, x := range gws {
		if x.addrOK {
			serve(&res.Config, x, w, backends)
		}
		st := gatewayStatus(x, opts.Addresses)
		w.backendCertStatus(x, &st) // backendcert.go
		frontendStatus(x.obj, &st)  // clientauth.go
		listenerSetStatuses(x, &st, &res)
		res.Gateways[x.key] = st
	}
	res.Policies = w.policyStatuses(opts.ControllerName)
	for _, b := range backends {
		res.Config.Backends = append(res.Config.Backends, b)
	}
	slices.SortFunc(res.Config.Backends, func(a, b *model.Backend) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(res.Config.Frontends, func(a, b model.Frontend) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(res.Config.UDP, func(a, b model.UDPService) int { return cmp.Compare(a.Name, b.Name) })
	w.keepListenerRoutes() // attachmemo.go
	w.endSplice(in)        // splice.go
	opts.Memo.end(&res)
	return res
}

type portKey struct {
	udp  bool
	port uint16
}

// gatewayAddrs is where a Gateway's listeners bind: the addresses its
// spec asks for, which must be the load balancer's, or all of them.
func gatewayAddrs(g *gwv1.Gateway, lb []netip.Addr) ([]netip.Addr, bool, string) {
	if len(g.Spec.Addresses) == 0 {
		return lb, true, ""
	}
	var out []netip.Addr
	for _, a := range g.Spec.Addresses {
		if a.Type != nil && *a.Type != gwv1.IPAddressType {
			return nil, false, "UnsupportedAddress"
		}
		ip, err := netip.ParseAddr(a.Value)
		if err != nil || !slices.Contains(lb, ip.Unmap()) {
			return nil, false, "AddressNotUsable"
		}
		out = append(out, ip.Unmap())
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out), true, ""
}
