package gateway

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

func listenerSet(ns, name string, age int, gw Key, entries ...gwv1.Listener) *gwv1.ListenerSet {
	s := &gwv1.ListenerSet{ObjectMeta: meta(ns, name, age)}
	s.Spec.ParentRef = gwv1.ParentGatewayReference{Name: gwv1.ObjectName(gw.Name), Namespace: ptr(gwv1.Namespace(gw.Namespace))}
	for _, l := range entries {
		s.Spec.Listeners = append(s.Spec.Listeners, gwv1.ListenerEntry{Name: l.Name, Hostname: l.Hostname, Port: l.Port, Protocol: l.Protocol,
			TLS: l.TLS, AllowedRoutes: l.AllowedRoutes})
	}
	return s
}

func lsParent(ns, name, section string) gwv1.ParentReference {
	p := parent(name, section)
	p.Kind, p.Group = ptr(gwv1.Kind(KindListenerSet)), ptr(gwv1.Group(gwv1.GroupName))
	if ns != "" {
		p.Namespace = ptr(gwv1.Namespace(ns))
	}
	return p
}

func allowListeners(from gwv1.FromNamespaces, labels map[string]string) *gwv1.AllowedListeners {
	a := &gwv1.AllowedListeners{Namespaces: &gwv1.ListenerNamespaces{From: &from}}
	if labels != nil {
		a.Namespaces.Selector = &metav1.LabelSelector{MatchLabels: labels}
	}
	return a
}

// lsBase: Gateway apps/gw with an HTTP listener on port 80 for
// gw.example.com that admits ListenerSets of its own namespace, and a
// Service to route to.
func lsBase() Input {
	a, sa := service("apps", "a", corev1.ProtocolTCP, 80, 8080, "10.244.0.5")
	g := gateway("apps", "gw", "hks", 0, listenerOf("web", gwv1.HTTPProtocolType, 80, "gw.example.com"))
	g.Spec.AllowedListeners = allowListeners(gwv1.NamespacesFromSame, nil)
	return Input{
		Classes:  []*gwv1.GatewayClass{class("hks", ControllerName)},
		Gateways: []*gwv1.Gateway{g},
		Services: []*corev1.Service{a}, Slices: []*desired.Slice{sa},
		Namespaces: []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, {ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"gw": "yes"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "other"}}},
	}
}

var gwKey = Key{"apps", "gw"}

// lsCond is a ListenerSet's condition of typ, "none" without a status.
func lsCond(res Result, ns, name, typ string) string {
	st, ok := res.ListenerSets[Key{ns, name}]
	if !ok {
		return "none"
	}
	return condOf(st.Conditions, typ)
}

// entryCond is a ListenerSet entry's conditions Accepted, Programmed,
// Conflicted and ResolvedRefs, and its attachedRoutes.
func entryCond(res Result, ns, name, entry string) string {
	for _, e := range res.ListenerSets[Key{ns, name}].Listeners {
		if string(e.Name) == entry {
			return fmt.Sprintf("%s %s %s %s %d", condOf(e.Conditions, "Accepted"), condOf(e.Conditions, "Programmed"),
				condOf(e.Conditions, "Conflicted"), condOf(e.Conditions, "ResolvedRefs"), e.AttachedRoutes)
		}
	}
	return "no entry"
}

// hostsOn are the HTTP host names served on port.
func hostsOn(res Result, port string) string {
	h := httpOf(res, port)
	if h == nil {
		return "no frontend"
	}
	var out []string
	for _, x := range h.Hosts {
		out = append(out, x.Name)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func attachedSets(res Result) string {
	n := res.Gateways[gwKey].AttachedListenerSets
	if n == nil {
		return "nil"
	}
	return fmt.Sprint(*n)
}

const accepted = "True/Accepted True/Programmed False/NoConflicts True/ResolvedRefs"

func TestListenerSets(t *testing.T) {
	web := func(name, host string) gwv1.Listener { return listenerOf(name, gwv1.HTTPProtocolType, 80, host) }
	route := func(ns, name string, age int, parents ...gwv1.ParentReference) *gwv1.HTTPRoute {
		r := hroute(name, age, nil, hrule("a", hmatch("PathPrefix", "/")))
		r.Namespace, r.Spec.ParentRefs = ns, parents
		return r
	}
	for _, tc := range []struct {
		name   string
		change func(in *Input)
		check  func(t *testing.T, res Result)
	}{
		{"an admitted entry serves its host on the Gateway's port", func(in *Input) {
			in.ListenerSets = []*gwv1.ListenerSet{listenerSet("apps", "ls", 1, gwKey, web("extra", "ls.example.com"))}
			in.HTTPRoutes = []*gwv1.HTTPRoute{route("apps", "r", 2, lsParent("", "ls", ""))}
		}, func(t *testing.T, res Result) {
			want(t, lsCond(res, "apps", "ls", "Accepted"), "True/Accepted")
			want(t, lsCond(res, "apps", "ls", "Programmed"), "True/Programmed")
			want(t, entryCond(res, "apps", "ls", "extra"), accepted+" 1")
			want(t, hostsOn(res, "80"), "ls.example.com")
			want(t, attachedSets(res), "1")
			want(t, fmt.Sprint(len(res.Gateways[gwKey].Listeners)), "1") // the Gateway's status lists its own only
			want(t, routeCond(res, KindHTTPRoute, "apps", "r", "Accepted"), "True/Accepted")
		}},
		{"allowedListeners unset: None", func(in *Input) {
			in.Gateways[0].Spec.AllowedListeners = nil
			in.ListenerSets = []*gwv1.ListenerSet{listenerSet("apps", "ls", 1, gwKey, web("extra", "ls.example.com"))}
		}, func(t *testing.T, res Result) {
			want(t, lsCond(res, "apps", "ls", "Accepted"), "False/NotAllowed")
			want(t, lsCond(res, "apps", "ls", "Programmed"), "False/NotAllowed")
			want(t, hostsOn(res, "80"), "") // the Gateway's listener serves no route
			want(t, attachedSets(res), "0")
		}},
		{"Same: another namespace's is not admitted", func(in *Input) {
			in.ListenerSets = []*gwv1.ListenerSet{listenerSet("team", "ls", 1, gwKey, web("extra", "ls.example.com"))}
		}, func(t *testing.T, res Result) {
			want(t, lsCond(res, "team", "ls", "Accepted"), "False/NotAllowed")
		}},
		{"Selector: a labelled namespace's is admitted, another's not", func(in *Input) {
			in.Gateways[0].Spec.AllowedListeners = allowListeners(gwv1.NamespacesFromSelector, map[string]string{"gw": "yes"})
			in.ListenerSets = []*gwv1.ListenerSet{listenerSet("team", "ls", 1, gwKey, web("extra", "team.example.com")),
				listenerSet("other", "ls", 1, gwKey, web("extra", "other.example.com"))}
			in.HTTPRoutes = []*gwv1.HTTPRoute{route("team", "r", 2, lsParent("", "ls", ""))}
		}, func(t *testing.T, res Result) {
			want(t, lsCond(res, "team", "ls", "Accepted"), "True/Accepted")
			want(t, lsCond(res, "other", "ls", "Accepted"), "False/NotAllowed")
			want(t, hostsOn(res, "80"), "team.example.com")
			want(t, attachedSets(res), "1")
		}},
		{"All: any namespace's is admitted", func(in *Input) {
			in.Gateways[0].Spec.AllowedListeners = allowListeners(gwv1.NamespacesFromAll, nil)
			in.ListenerSets = []*gwv1.ListenerSet{listenerSet("other", "ls", 1, gwKey, web("extra", "other.example.com"))}
		}, func(t *testing.T, res Result) {
			want(t, lsCond(res, "other", "ls", "Accepted"), "True/Accepted")
		}},
		{"an entry with the hostname of a Gateway's listener loses; the set's other entries serve", func(in *Input) {
			in.ListenerSets = []*gwv1.ListenerSet{
				listenerSet("apps", "ls1", 1, gwKey, web("mine", "ls1.example.com"), web("dup", "gw.example.com")),
				listenerSet("apps", "ls2", 1, gwKey, web("dup", "gw.example.com")),
			}
		}, func(t *testing.T, res Result) {
			want(t, entryCond(res, "apps", "ls1", "mine"), accepted+" 0")
			want(t, entryCond(res, "apps", "ls1", "dup"), "False/HostnameConflict False/HostnameConflict True/HostnameConflict True/ResolvedRefs 0")
			want(t, lsCond(res, "apps", "ls1", "Accepted"), "True/Accepted")
			want(t, lsCond(res, "apps", "ls2", "Accepted"), "False/ListenersNotValid")
			want(t, lsCond(res, "apps", "ls2", "Programmed"), "False/ListenersNotValid")
			want(t, condOf(listenerStatus(res, "apps", "gw", "web").Conditions, "Conflicted"), "False/NoConflicts")
			want(t, attachedSets(res), "1")
		}},
		{"a TCP entry on the Gateway's HTTP port loses: protocol conflict", func(in *Input) {
			in.ListenerSets = []*gwv1.ListenerSet{listenerSet("apps", "ls", 1, gwKey, listenerOf("tcp", gwv1.TCPProtocolType, 80, ""))}
		}, func(t *testing.T, res Result) {
			want(t, entryCond(res, "apps", "ls", "tcp"), "False/ProtocolConflict False/ProtocolConflict True/ProtocolConflict True/ResolvedRefs 0")
			want(t, lsCond(res, "apps", "ls", "Accepted"), "False/ListenersNotValid")
			want(t, condOf(listenerStatus(res, "apps", "gw", "web").Conditions, "Accepted"), "True/Accepted")
		}},
		{"between ListenerSets the older wins", func(in *Input) {
			in.ListenerSets = []*gwv1.ListenerSet{
				listenerSet("apps", "a-young", 5, gwKey, web("x", "x.example.com")),
				listenerSet("apps", "z-old", 1, gwKey, listenerOf("x", gwv1.TCPProtocolType, 80, "")),
			}
		}, func(t *testing.T, res Result) {
			// z-old's TCP entry conflicts with the Gateway's HTTP
			// listener; a-young then has the port's HTTP to itself.
			want(t, lsCond(res, "apps", "z-old", "Accepted"), "False/ListenersNotValid")
			want(t, lsCond(res, "apps", "a-young", "Accepted"), "True/Accepted")
		}},
		{"between ListenerSets of one age the first by name wins", func(in *Input) {
			in.ListenerSets = []*gwv1.ListenerSet{
				listenerSet("apps", "b", 1, gwKey, web("x", "x.example.com")),
				listenerSet("apps", "a", 1, gwKey, web("x", "x.example.com")),
			}
		}, func(t *testing.T, res Result) {
			want(t, entryCond(res, "apps", "a", "x"), accepted+" 0")
			want(t, entryCond(res, "apps", "b", "x"), "False/HostnameConflict False/HostnameConflict True/HostnameConflict True/ResolvedRefs 0")
		}},
		{"routes: a Gateway parentRef reaches its own listeners, a ListenerSet one the set's", func(in *Input) {
			in.ListenerSets = []*gwv1.ListenerSet{listenerSet("apps", "ls", 1, gwKey, web("extra", "ls.example.com"))}
			in.HTTPRoutes = []*gwv1.HTTPRoute{
				route("apps", "both", 2, parent("gw", ""), lsParent("apps", "ls", "")),
				route("apps", "gw-only", 3, parent("gw", "")),
				route("apps", "entry-via-gw", 4, parent("gw", "extra")),
			}
		}, func(t *testing.T, res Result) {
			both := res.Routes.Get(RouteKey{KindHTTPRoute, Key{"apps", "both"}})
			if len(both) != 2 || both[1].ParentRef.Kind == nil || *both[1].ParentRef.Kind != KindListenerSet {
				t.Fatalf("route both: parents %+v, want the Gateway's and the ListenerSet's", both)
			}
			want(t, condOf(both[0].Conditions, "Accepted"), "True/Accepted")
			want(t, condOf(both[1].Conditions, "Accepted"), "True/Accepted")
			want(t, fmt.Sprint(len(res.Routes.Get(RouteKey{KindHTTPRoute, Key{"apps", "gw-only"}}))), "1")
			want(t, routeCond(res, KindHTTPRoute, "apps", "entry-via-gw", "Accepted"), "False/NoMatchingParent")
			want(t, fmt.Sprint(listenerStatus(res, "apps", "gw", "web").AttachedRoutes), "2")
			want(t, entryCond(res, "apps", "ls", "extra"), accepted+" 1")
			want(t, hostsOn(res, "80"), "gw.example.com ls.example.com")
		}},
		{"an entry's allowedRoutes Same is the ListenerSet's namespace", func(in *Input) {
			in.Gateways[0].Spec.AllowedListeners = allowListeners(gwv1.NamespacesFromAll, nil)
			in.ListenerSets = []*gwv1.ListenerSet{listenerSet("team", "ls", 1, gwKey, web("extra", "team.example.com"))}
			in.HTTPRoutes = []*gwv1.HTTPRoute{route("team", "mine", 2, lsParent("", "ls", "")), route("apps", "gws", 2, lsParent("team", "ls", ""))}
		}, func(t *testing.T, res Result) {
			want(t, routeCond(res, KindHTTPRoute, "team", "mine", "Accepted"), "True/Accepted")
			want(t, routeCond(res, KindHTTPRoute, "apps", "gws", "Accepted"), "False/NotAllowedByListeners")
		}},
		{"a route naming a ListenerSet that is not admitted is not accepted", func(in *Input) {
			in.Gateways[0].Spec.AllowedListeners = nil
			in.ListenerSets = []*gwv1.ListenerSet{listenerSet("apps", "ls", 1, gwKey, web("extra", "ls.example.com"))}
			in.HTTPRoutes = []*gwv1.HTTPRoute{route("apps", "r", 2, lsParent("", "ls", ""))}
		}, func(t *testing.T, res Result) {
			want(t, routeCond(res, KindHTTPRoute, "apps", "r", "Accepted"), "False/NoMatchingParent")
			want(t, hostsOn(res, "80"), "")
		}},
		{"a ListenerSet naming another controller's Gateway gets no status from us", func(in *Input) {
			in.ListenerSets = []*gwv1.ListenerSet{listenerSet("apps", "ls", 1, Key{"apps", "theirs"}, web("extra", "ls.example.com"))}
		}, func(t *testing.T, res Result) {
			want(t, lsCond(res, "apps", "ls", "Accepted"), "none")
			want(t, attachedSets(res), "nil")
		}},
		{"an entry's certificate in another namespace needs a grant from ListenerSets", func(in *Input) {
			in.Gateways[0].Spec.AllowedListeners = allowListeners(gwv1.NamespacesFromAll, nil)
			in.Secrets = []*Secret{tlsSecret(t, "certs", "cert", "ls.example.com")}
			fromGW := grant("certs", "apps", "Gateway", "")
			fromLS := grant("certs", "team", KindListenerSet, "")
			fromGW.Spec.To[0].Kind, fromLS.Spec.To[0].Kind = "Secret", "Secret"
			fromLS.Name = "ls-grant"
			in.Grants = []*gwv1beta1.ReferenceGrant{fromGW, fromLS}
			https := func(host string) gwv1.Listener {
				l := httpsListener("tls", 443, secretRef("certs", "cert"))
				l.Hostname = ptr(gwv1.Hostname(host))
				return l
			}
			in.ListenerSets = []*gwv1.ListenerSet{listenerSet("apps", "ls", 1, gwKey, https("a.example.com")),
				listenerSet("team", "ls", 2, gwKey, https("ls.example.com"))}
		}, func(t *testing.T, res Result) {
			// apps/ls has only a grant for Gateways: refused.
			want(t, entryCond(res, "apps", "ls", "tls"), "True/Accepted False/Invalid False/NoConflicts False/RefNotPermitted 0")
			want(t, lsCond(res, "apps", "ls", "Accepted"), "False/ListenersNotValid")
			want(t, entryCond(res, "team", "ls", "tls"), accepted+" 0")
			want(t, lsCond(res, "team", "ls", "Programmed"), "True/Programmed")
		}},
		{"a ListenerSet of a Gateway that is not accepted", func(in *Input) {
			in.Gateways[0].Spec.Listeners = []gwv1.Listener{listenerOf("bad", "SCTP", 80, "")}
			in.ListenerSets = []*gwv1.ListenerSet{listenerSet("apps", "ls", 1, gwKey, web("extra", "ls.example.com"))}
		}, func(t *testing.T, res Result) {
			want(t, lsCond(res, "apps", "ls", "Accepted"), "False/ParentNotAccepted")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := lsBase()
			tc.change(&in)
			tc.check(t, Compute(in, Options{}))
		})
	}
}

// An entry on a port its Gateway serves adds map data to that port's
// frontend: the structure HAProxy is reloaded for stays the same. An
// entry on a new port is a new frontend.
func TestListenerSetEntryStructure(t *testing.T) {
	route := func(name string, p gwv1.ParentReference) *gwv1.HTTPRoute {
		r := hroute(name, 2, nil, hrule("a", hmatch("PathPrefix", "/")))
		r.Spec.ParentRefs = []gwv1.ParentReference{p}
		return r
	}
	hash := func(in Input) string {
		res := Compute(in, Options{})
		layout, _ := plan.Assign(res.Config, nil, true)
		return render.StructureHash(res.Config, layout, render.Options{StatsSocket: "/run/hks/admin.sock"})
	}
	before := lsBase()
	before.HTTPRoutes = []*gwv1.HTTPRoute{route("gw-route", parent("gw", ""))}
	for _, tc := range []struct {
		name  string
		entry gwv1.Listener
		same  bool
	}{
		{"an entry on the Gateway's port", listenerOf("extra", gwv1.HTTPProtocolType, 80, "ls.example.com"), true},
		{"an entry on a port of its own", listenerOf("extra", gwv1.HTTPProtocolType, 8080, "ls.example.com"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			after := lsBase()
			after.ListenerSets = []*gwv1.ListenerSet{listenerSet("apps", "ls", 1, gwKey, tc.entry)}
			after.HTTPRoutes = []*gwv1.HTTPRoute{before.HTTPRoutes[0], route("ls-route", lsParent("", "ls", ""))}
			res := Compute(after, Options{})
			want(t, entryCond(res, "apps", "ls", "extra"), accepted+" 1")
			if got := hash(after) == hash(before); got != tc.same {
				t.Errorf("structure unchanged: %v, want %v", got, tc.same)
			}
		})
	}
}

// With --address-pools, an address is shared (by key) only where no port
// clashes: an admitted entry's port counts as the Gateway's own.
func TestListenerSetPortsInAddressSharing(t *testing.T) {
	shared := map[string]string{pools.SharedIPAnnotation: "k"}
	for _, tc := range []struct {
		name  string
		sets  []*gwv1.ListenerSet
		allow *gwv1.AllowedListeners
		want  string
	}{
		{"no entry: shared with the Service", nil, allowListeners(gwv1.NamespacesFromSame, nil), "198.18.0.1"},
		{"an entry on the Service's port: an address of its own",
			[]*gwv1.ListenerSet{listenerSet("apps", "ls", 1, gwKey, listenerOf("tls", gwv1.TCPProtocolType, 443, ""))},
			allowListeners(gwv1.NamespacesFromSame, nil), "198.18.0.0"},
		{"an entry not admitted does not count",
			[]*gwv1.ListenerSet{listenerSet("apps", "ls", 1, gwKey, listenerOf("tls", gwv1.TCPProtocolType, 443, ""))},
			nil, "198.18.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := gateway("apps", "gw", "hks", 1, listenerOf("tcp", gwv1.TCPProtocolType, 8443, ""))
			g.Annotations, g.Spec.AllowedListeners = shared, tc.allow
			in := Input{Classes: []*gwv1.GatewayClass{class("hks", ControllerName)}, Gateways: []*gwv1.Gateway{g},
				Services: []*corev1.Service{lbService("web", 0, "198.18.0.1", shared)}, ListenerSets: tc.sets}
			res := Compute(in, Options{Pooled: true, Pools: []pools.Pool{testPool(t, "p", "198.18.0.0/30")}})
			var got []string
			for _, a := range res.Gateways[gwKey].Addresses {
				got = append(got, a.Value)
			}
			want(t, strings.Join(got, ","), tc.want)
		})
	}
}
