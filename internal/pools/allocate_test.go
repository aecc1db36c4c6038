package pools

import (
	"fmt"
	"net/netip"
	"reflect"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func rg(s string) Range {
	r, err := ParseRange(s)
	if err != nil {
		panic(err)
	}
	return r
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, x := range s {
		out = append(out, netip.MustParseAddr(x))
	}
	return out
}

type labelSel map[string]string

func (l labelSel) Matches(m map[string]string) bool {
	for k, v := range l {
		if m[k] != v {
			return false
		}
	}
	return true
}

func req(key string, mod ...func(*Request)) Request {
	ns, _, _ := strings.Cut(key, "/")
	r := Request{Key: key, Namespace: ns, Ports: []Port{{"TCP", 443}}}
	for _, m := range mod {
		m(&r)
	}
	return r
}

func current(a ...string) func(*Request) { return func(r *Request) { r.Current = addrs(a...) } }

// ours: current addresses the status marks ipMode Proxy.
func ours(a ...string) func(*Request) {
	return func(r *Request) { r.Current, r.Ours = addrs(a...), addrs(a...) }
}
func asks(a ...string) func(*Request) { return func(r *Request) { r.IPs = addrs(a...) } }
func inPool(p string) func(*Request)  { return func(r *Request) { r.Pool = p } }
func share(k string, port int32) func(*Request) {
	return func(r *Request) { r.ShareKey, r.Ports = k, []Port{{"TCP", port}} }
}
func fams(f ...int) func(*Request) { return func(r *Request) { r.Families = f } }

// summary: "key=a,b" sorted, then "key:Reason" problems.
func summary(res Result) string {
	var out []string
	for k, as := range res.Assigned {
		s := make([]string, len(as))
		for i, a := range as {
			s[i] = a.String()
		}
		out = append(out, k+"="+strings.Join(s, ","))
	}
	sort.Strings(out)
	for _, p := range res.Problems {
		out = append(out, p.Key+":"+p.Reason)
	}
	return strings.Join(out, " ")
}

func TestAllocate(t *testing.T) {
	web := Pool{Name: "web", Ranges: []Range{rg("198.18.0.10-198.18.0.12"), rg("2001:db8::/127")}, AutoAssign: true}
	manual := Pool{Name: "manual", Ranges: []Range{rg("203.0.113.0/30")}}
	team := Pool{Name: "team", Ranges: []Range{rg("192.0.2.0/31")}, AutoAssign: true, Namespaces: []string{"team"}, Priority: -1}
	for _, tc := range []struct {
		name  string
		pools []Pool
		reqs  []Request
		want  string
	}{
		{"two Services, two addresses", []Pool{web}, []Request{req("a/x"), req("a/y")},
			"a/x=198.18.0.10 a/y=198.18.0.11"},
		{"current addresses stay, others fill the gaps", []Pool{web}, []Request{req("a/x"), req("a/y", current("198.18.0.10")), req("a/z", current("198.18.0.12"))},
			"a/x=198.18.0.11 a/y=198.18.0.10 a/z=198.18.0.12"},
		{"an address two statuses claim goes to the first", []Pool{web}, []Request{req("a/x", current("198.18.0.11")), req("a/y", current("198.18.0.11"))},
			"a/x=198.18.0.11 a/y=198.18.0.10"},
		{"a current address outside every pool is dropped", []Pool{web}, []Request{req("a/x", current("192.0.2.99"))},
			"a/x=198.18.0.10"},
		{"a pool gone (deleted, unreadable at start): its Service keeps the address its status marks ours, nobody else gets it", []Pool{web},
			[]Request{req("a/w"), req("a/x", ours("192.0.2.99")), req("a/y", asks("192.0.2.99"))},
			"a/w=198.18.0.10 a/x=192.0.2.99 a/y:AddressNotInPool"},
		{"a pool gone: an address two statuses list is not a pool's (single-address mode)", []Pool{web},
			[]Request{req("a/x", ours("192.0.2.99")), req("a/y", ours("192.0.2.99"))},
			"a/x=198.18.0.10 a/y=198.18.0.11"},
		{"a pool gone: Services sharing a key keep their shared address", []Pool{web},
			[]Request{req("a/x", ours("192.0.2.99"), share("k", 443)), req("a/y", ours("192.0.2.99"), share("k", 80))},
			"a/x=192.0.2.99 a/y=192.0.2.99"},
		{"a pool gone: a Service that asks for another address moves", []Pool{web},
			[]Request{req("a/x", ours("192.0.2.99"), asks("198.18.0.12")), req("a/y", ours("192.0.2.98"), inPool("web"))},
			"a/x=198.18.0.12 a/y=198.18.0.10"},
		{"a pool gone: not of the Service's family", []Pool{web}, []Request{req("a/x", ours("2001:db8:5::1"))},
			"a/x=198.18.0.10"},
		{"a pool over a kept address: still its Service's", []Pool{web, {Name: "new", Ranges: []Range{rg("192.0.2.98/31")}, AutoAssign: true, Priority: -1}},
			[]Request{req("a/w"), req("a/x", ours("192.0.2.99"))},
			"a/w=192.0.2.98 a/x=192.0.2.99"},
		{"exhausted: the last waits", []Pool{web}, []Request{req("a/w"), req("a/x"), req("a/y"), req("a/z")},
			"a/w=198.18.0.10 a/x=198.18.0.11 a/y=198.18.0.12 a/z:AddressPoolExhausted"},
		{"asked address", []Pool{web}, []Request{req("a/x"), req("a/y", asks("198.18.0.12"))},
			"a/x=198.18.0.10 a/y=198.18.0.12"},
		{"asked address taken: Event, current kept", []Pool{web}, []Request{req("a/x", current("198.18.0.12")), req("a/y", asks("198.18.0.12"), current("198.18.0.11"))},
			"a/x=198.18.0.12 a/y=198.18.0.11 a/y:AddressTaken"},
		{"asked address in no pool", []Pool{web}, []Request{req("a/x", asks("192.0.2.50"))},
			"a/x:AddressNotInPool"},
		{"asked address of the wrong family", []Pool{web}, []Request{req("a/x", asks("2001:db8::1"))},
			"a/x:AddressWrongFamily"},
		{"asked address from a pool without autoAssign", []Pool{web, manual}, []Request{req("a/x", asks("203.0.113.2"))},
			"a/x=203.0.113.2"},
		{"asked pool", []Pool{web, manual}, []Request{req("a/x", inPool("manual")), req("a/y")},
			"a/x=203.0.113.0 a/y=198.18.0.10"},
		{"asked pool missing", []Pool{web}, []Request{req("a/x", inPool("nope"))},
			"a/x:NoAddressPool"},
		{"no pool serves the namespace", []Pool{team}, []Request{req("a/x"), req("team/y")},
			"team/y=192.0.2.0 a/x:NoAddressPool"},
		{"priority: the team pool first, then the shared one", []Pool{web, team}, []Request{req("team/a"), req("team/b"), req("team/c"), req("other/d")},
			"other/d=198.18.0.11 team/a=192.0.2.0 team/b=192.0.2.1 team/c=198.18.0.10"},
		{"shared key, other ports: one address", []Pool{web}, []Request{req("a/x", share("k", 443)), req("a/y", share("k", 80)), req("a/z", share("other", 22))},
			"a/x=198.18.0.10 a/y=198.18.0.10 a/z=198.18.0.11"},
		{"shared key, same port: another address", []Pool{web}, []Request{req("a/x", share("k", 443)), req("a/y", share("k", 443))},
			"a/x=198.18.0.10 a/y=198.18.0.11"},
		{"dual-stack", []Pool{web}, []Request{req("a/x", fams(4, 6)), req("a/y", fams(6)), req("a/z", fams(6, 4))},
			"a/x=198.18.0.10,2001:db8:: a/y=2001:db8::1 a/z=198.18.0.11 a/z:AddressPoolExhausted"},
		{"service selector", []Pool{{Name: "sel", Ranges: []Range{rg("192.0.2.8/30")}, AutoAssign: true, ServiceSelector: labelSel{"tier": "edge"}}},
			[]Request{req("a/x"), req("a/y", func(r *Request) { r.Labels = map[string]string{"tier": "edge"} })},
			"a/y=192.0.2.8 a/x:NoAddressPool"},
		{"namespace selector", []Pool{{Name: "sel", Ranges: []Range{rg("192.0.2.8/30")}, AutoAssign: true, NamespaceSelector: labelSel{"env": "prod"}}},
			[]Request{req("a/x"), req("b/y", func(r *Request) { r.NamespaceLabels = map[string]string{"env": "prod"} })},
			"b/y=192.0.2.8 a/x:NoAddressPool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := summary(Allocate(tc.pools, tc.reqs)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// Allocating again from the statuses it produced changes nothing, in any
// order of the Services: allocation is stable across restarts.
func TestAllocateStable(t *testing.T) {
	pools := []Pool{{Name: "p", Ranges: []Range{rg("198.18.0.0/24")}, AutoAssign: true}}
	var reqs []Request
	for i := range 100 {
		reqs = append(reqs, req(fmt.Sprintf("ns/s%03d", i)))
	}
	first := Allocate(pools, reqs)
	for i := range reqs {
		reqs[i].Current = first.Assigned[reqs[i].Key]
	}
	for i, j := 0, len(reqs)-1; i < j; i, j = i+1, j-1 {
		reqs[i], reqs[j] = reqs[j], reqs[i]
	}
	again := Allocate(pools, reqs)
	if !reflect.DeepEqual(first.Assigned, again.Assigned) {
		t.Errorf("allocation moved")
	}
	if c := again.Pools["p"]; c.Assigned != 100 || c.Free != 156 {
		t.Errorf("counts %+v", c)
	}
}

func TestParseRange(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.0/28":              "192.0.2.0/28",
		"192.0.2.0-192.0.2.15":      "192.0.2.0/28",
		"192.0.2.3-192.0.2.9":       "192.0.2.3-192.0.2.9",
		"2001:db8::/64":             "2001:db8::/64",
		"192.0.2.1/24":              "error",
		"192.0.2.9-192.0.2.3":       "error",
		"192.0.2.1-2001:db8::1":     "error",
		"192.0.2.0/24 bind :1":      "error",
		"fe80::1%eth0-fe80::2%eth0": "error",
		"::ffff:192.0.2.0/120":      "error",
		"":                          "error",
		// Special addresses no Service may listen on: the whole range
		// is refused (the pool unusable, its condition says why).
		"0.0.0.0/30":                      "error",
		"0.0.0.0/0":                       "error",
		"::/127":                          "error",
		"255.255.255.250-255.255.255.255": "error",
		"224.0.0.0/24":                    "error",
		"223.255.255.254-224.0.0.1":       "error",
		"ff02::/120":                      "error",
		"169.254.1.0/24":                  "error",
		"fe80::/64":                       "error",
		"0.0.0.1-0.0.0.9":                 "0.0.0.1-0.0.0.9",
		"223.255.255.0/24":                "223.255.255.0/24",
		"127.0.0.0/24":                    "127.0.0.0/24",
	} {
		r, err := ParseRange(in)
		got := "error"
		if err == nil {
			got = r.String()
		}
		if got != want {
			t.Errorf("ParseRange(%q) = %s (%v), want %s", in, got, err, want)
		}
	}
	if c := Allocate([]Pool{{Name: "big", Ranges: []Range{rg("2001:db8::/32")}}}, nil).Pools["big"]; c.Free <= 0 {
		t.Errorf("a /32 of IPv6 counts %+v", c)
	}
}

func TestParseIPs(t *testing.T) {
	for in, ok := range map[string]bool{
		"198.18.0.1":              true,
		"198.18.0.1, 2001:db8::1": true,
		"198.18.0.1,198.18.0.2":   false,
		"198.18.0.1;x":            false,
		"":                        false,
		"198.18.0.0/24":           false,
		"0.0.0.0":                 false,
		"::":                      false,
		"224.0.0.1":               false,
		"fe80::1":                 false,
		"255.255.255.255":         false,
	} {
		if _, err := ParseIPs(in); (err == nil) != ok {
			t.Errorf("ParseIPs(%q): %v", in, err)
		}
	}
}

func TestRequestForKeepsOnInvalid(t *testing.T) {
	pools := []Pool{{Name: "p", Ranges: []Range{rg("198.18.0.0/30")}, AutoAssign: true}}
	r := Request{Key: "a/x", KeepOnly: true, Current: addrs("198.18.0.2")}
	if got := summary(Allocate(pools, []Request{r, {Key: "a/y", KeepOnly: true}})); got != "a/x=198.18.0.2" {
		t.Errorf("got %s", got)
	}
}

func TestAddressPoolObject(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "haproxy-k8s-sync.io/v1alpha1", "kind": "AddressPool", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{
			"addresses":  []any{"198.18.0.0/30", "2001:db8::1-2001:db8::3"},
			"autoAssign": false,
			"serviceAllocation": map[string]any{"priority": int64(5), "namespaces": []any{"shop"},
				"serviceSelector": map[string]any{"matchLabels": map[string]any{"tier": "edge"}}},
		},
	}}
	ap, err := FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ap.Pool()
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "web" || p.AutoAssign || p.Priority != 5 || len(p.Ranges) != 2 || p.Ranges[1].String() != "2001:db8::1-2001:db8::3" ||
		!p.ServiceSelector.Matches(map[string]string{"tier": "edge"}) || p.ServiceSelector.Matches(nil) {
		t.Errorf("pool %+v", p)
	}
	// One bad entry makes the whole pool unusable, never half of it.
	ap.Spec.Addresses = append(ap.Spec.Addresses, "198.18.1.0/24 evil")
	if _, err := ap.Pool(); err == nil || !strings.Contains(err.Error(), "evil") {
		t.Errorf("err %v", err)
	}
	ap.Spec.Addresses = nil
	if _, err := ap.Pool(); err == nil {
		t.Errorf("a pool without addresses was accepted")
	}
}

func TestRequestFor(t *testing.T) {
	single := corev1.IPFamilyPolicySingleStack
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Labels: map[string]string{"tier": "edge"},
			Annotations: map[string]string{SharedIPAnnotation: "k", PoolAnnotation: "web"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, IPFamilies: []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP}, {Port: 443}}, LoadBalancerIP: "198.18.0.7"},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "198.18.0.9"}, {Hostname: "x"}}}},
	}
	r, err := RequestFor(s, nil)
	if err != nil || r.Key != "shop/web" || !reflect.DeepEqual(r.Families, []int{6, 4}) || r.ShareKey != "k" || r.Pool != "web" ||
		!reflect.DeepEqual(r.Ports, []Port{{"UDP", 53}, {"TCP", 443}}) || !reflect.DeepEqual(r.IPs, addrs("198.18.0.7")) ||
		!reflect.DeepEqual(r.Current, addrs("198.18.0.9")) {
		t.Errorf("request %+v, %v", r, err)
	}
	s.Spec.IPFamilyPolicy = &single
	s.Annotations[IPsAnnotation] = "198.18.0.7 ; bind"
	r, err = RequestFor(s, nil)
	if err == nil || !r.KeepOnly || !reflect.DeepEqual(r.Families, []int{6}) {
		t.Errorf("request %+v, %v", r, err)
	}
}

// A frozen pool (its spec turned unreadable) keeps what it gave and
// gives nothing more.
func TestFrozenPool(t *testing.T) {
	p := Pool{Name: "p", Ranges: []Range{rg("198.18.0.0/30")}, AutoAssign: true, Frozen: true}
	got := summary(Allocate([]Pool{p}, []Request{req("a/x", current("198.18.0.1")), req("a/y"), req("a/z", asks("198.18.0.2"))}))
	if got != "a/x=198.18.0.1 a/y:NoAddressPool a/z:AddressNotInPool" {
		t.Errorf("got %s", got)
	}
}

// An address the last pass gave stays with its Service until the status
// lists it: an older Service appearing meanwhile (created in the same
// second, a name that sorts first) does not take it.
func TestPreviousPassKeeps(t *testing.T) {
	p := []Pool{{Name: "p", Ranges: []Range{rg("198.18.0.10-198.18.0.11")}, AutoAssign: true}}
	class := "c"
	svc := func(name string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.Unix(1000, 0)},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class}}
	}
	all := func(*corev1.Service) bool { return true }
	first, _ := ForServicesWith(p, []*corev1.Service{svc("b")}, nil, all, nil, nil, nil)
	if got := summary(first); got != "ns/b=198.18.0.10" {
		t.Fatalf("first pass: %s", got)
	}
	both := []*corev1.Service{svc("a"), svc("b")}
	if got := summary(mustFor(ForServicesWith(p, both, nil, all, nil, first.Assigned, nil))); got != "ns/a=198.18.0.11 ns/b=198.18.0.10" {
		t.Errorf("with the last pass's: %s", got)
	}
	if got := summary(mustFor(ForServicesWith(p, both, nil, all, nil, nil, nil))); got != "ns/a=198.18.0.10 ns/b=198.18.0.11" {
		t.Errorf("without (what it guards against): %s", got)
	}
}

func mustFor(r Result, _ []ServiceProblem) Result { return r }

// A Service that holds a special address (handed out by an older release
// from a pool now refused) does not keep it as an orphan: it is given one
// from a usable pool instead.
func TestSpecialOrphanNotKept(t *testing.T) {
	web := Pool{Name: "web", AutoAssign: true, Ranges: []Range{rg("198.18.0.10-198.18.0.12")}}
	for _, a := range []string{"0.0.0.0", "224.0.0.1", "255.255.255.255", "169.254.0.1"} {
		res := Allocate([]Pool{web}, []Request{req("a/x", ours(a))})
		if got := summary(res); got != "a/x=198.18.0.10" {
			t.Errorf("holding %s: %s, want a/x=198.18.0.10", a, got)
		}
	}
	if got := summary(Allocate([]Pool{web}, []Request{req("a/x", ours("192.0.2.1"))})); got != "a/x=192.0.2.1" {
		t.Errorf("an ordinary orphan: %s, want it kept", got)
	}
}

// A Service needing a family its pools never had is told so, not that
// the pools ran out of it.
func TestAllocateFamilyMissing(t *testing.T) {
	v4 := Pool{Name: "v4", Ranges: []Range{rg("198.18.0.10/32")}, AutoAssign: true}
	for _, tc := range []struct {
		name string
		reqs []Request
		want string
	}{
		{"never had IPv6", []Request{req("a/x", fams(4, 6))}, "AddressPool(s) v4 have no IPv6 addresses; the Service waits"},
		{"ran out of IPv4", []Request{req("a/x"), req("a/y")}, "no free IPv4 address in AddressPool(s) v4; the Service waits"},
		// the address-pool annotation's value, quoted: a newline cannot split the Event
		{"asked pool with a newline", []Request{req("a/x", inPool("v4\nWarning Forged"))}, `AddressPool "v4\nWarning Forged" does not exist or does not serve this Service`},
	} {
		res := Allocate([]Pool{v4}, tc.reqs)
		if len(res.Problems) != 1 || res.Problems[0].Message != tc.want {
			t.Errorf("%s: problems %+v, want %q", tc.name, res.Problems, tc.want)
		}
	}
}
