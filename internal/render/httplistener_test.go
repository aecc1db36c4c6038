package render

import (
	"bytes"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

func httpListenerOpts() Options {
	o := tproxyOpts()
	o.Listeners.HTTP = true
	return o
}

// gatewayHTTP is a plain HTTP Gateway listener on addr:port whose hosts
// each send every path to backend be.
func gatewayHTTP(name, addr string, port uint16, be string, hosts ...string) model.Frontend {
	h := &model.HTTP{Port: port, Actions: []model.HTTPAction{{Backends: []model.WeightedBackend{{Name: be, Weight: 1}}}}}
	for _, n := range hosts {
		h.Hosts = append(h.Hosts, model.HTTPHost{Name: n, Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 0}}})
	}
	return model.Frontend{Name: name, Service: "default/" + name, Binds: []model.Bind{{Addr: ap(addr), Port: port, Transparent: true}}, HTTP: model.Shaped(h)}
}

// twoGateways: gateway one on 203.0.113.10:80 (a.example.com, a wildcard
// and any host) and gateway two on 203.0.113.11:8080 (a.example.com too,
// to another backend), beside a TCP Service behind the TCP listener.
func twoGateways() model.Config {
	cfg := httpRouted()
	cfg.Frontends = []model.Frontend{
		gatewayHTTP("gw_default_one_80", "203.0.113.10", 80, "gwh_default_a_80", "a.example.com", "*.example.com", model.AnyHost),
		{Name: "fe_default_db_5432", Service: "default/db", Binds: []model.Bind{{Addr: ap("203.0.113.10"), Port: 5432, Transparent: true}}, Backend: "gwh_default_a_80"},
		gatewayHTTP("gw_default_two_8080", "203.0.113.11", 8080, "gwh_default_b_80", "a.example.com"),
	}
	return cfg
}

func TestHTTPListened(t *testing.T) {
	gw := gatewayHTTP("gw", "203.0.113.10", 80, "be", "a.example.com")
	off := httpListenerOpts()
	off.Listeners.HTTP = false
	ports := httpListenerOpts()
	ports.Listeners.Mode = ListenersPorts
	with := func(change func(f *model.Frontend)) model.Frontend {
		f := gw
		f.Binds = slices.Clone(gw.Binds)
		change(&f)
		return f
	}
	for _, tc := range []struct {
		name string
		f    model.Frontend
		o    Options
		want bool
	}{
		{"a plain HTTP listener", gw, httpListenerOpts(), true},
		{"two addresses, both families", with(func(f *model.Frontend) {
			f.Binds = append(f.Binds, model.Bind{Addr: ap("2001:db8::10"), Port: 80})
		}), httpListenerOpts(), true},
		{"the HTTP listener off", gw, off, false},
		{"ports mode", gw, ports, false},
		{"TLS terminated", with(func(f *model.Frontend) { f.TLS = &model.TLS{} }), httpListenerOpts(), false},
		{"every address", with(func(f *model.Frontend) { f.Binds[0].Addr = netip.Addr{} }), httpListenerOpts(), false},
		{"loopback", with(func(f *model.Frontend) { f.Binds[0].Addr = ap("127.0.0.1") }), httpListenerOpts(), false},
		{"the HTTP listener's port", with(func(f *model.Frontend) { f.Binds[0].Port = DefaultHTTPListenerPort }), httpListenerOpts(), false},
		{"the TCP listener's port", with(func(f *model.Frontend) { f.Binds[0].Port = 15080 }), httpListenerOpts(), false},
		{"PROXY protocol", with(func(f *model.Frontend) { f.AcceptProxy = true }), httpListenerOpts(), false},
		{"maxconn", with(func(f *model.Frontend) { f.MaxConn = 10 }), httpListenerOpts(), false},
		{"a TCP Service", twoGateways().Frontends[1], httpListenerOpts(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.o.HTTPListened(tc.f); got != tc.want {
				t.Errorf("HTTPListened = %v, want %v", got, tc.want)
			}
			if tc.o.HTTPListened(tc.f) && tc.o.Listened(tc.f) {
				t.Errorf("both listeners take the frontend")
			}
		})
	}
}

// The fixed HTTP listener's table keys each host by its listener: the
// same host on two Gateways finds each one's backend, and one listener's
// hosts are nothing to another.
func TestHTTPListenerMaps(t *testing.T) {
	o := httpListenerOpts()
	view := HTTPListenerView(twoGateways(), o)
	if len(view.Frontends) != 2 || view.Frontends[0].Name != HTTPListenerFrontend || view.Frontends[1].Name != "fe_default_db_5432" {
		t.Fatalf("view's frontends %v, want the fixed HTTP listener then the TCP Service", names(view.Frontends))
	}
	m := HTTPMaps(view.Frontends[0].HTTP)
	hosts := map[string]string{}
	for _, e := range m[HTTPHosts] {
		hosts[e.Key] = e.Value
	}
	one, two := hosts["203.0.113.10:80|a.example.com"], hosts["203.0.113.11:8080|a.example.com"]
	if one == "" || two == "" || one == two {
		t.Fatalf("a.example.com under each listener: %q and %q, want two hosts (%v)", one, two, hosts)
	}
	for _, k := range []string{"203.0.113.10:80|*.example.com", "203.0.113.10:80|*"} {
		if hosts[k] == "" {
			t.Errorf("no host %q (%v)", k, hosts)
		}
	}
	if len(hosts) != 4 {
		t.Errorf("hosts %v, want 4 (gateway two has no wildcard and no any-host)", hosts)
	}
	backendOf := func(hid string) string {
		pre := lookup(m[HTTPPrefix], hid+"/")
		best := lookup(m[HTTPMatch], pre+"|m0|")
		if len(best) < 8 {
			return ""
		}
		for _, e := range m[HTTPBackends] {
			if e.Key[:len(e.Key)-1] == best[7:]+":" {
				return e.Value
			}
		}
		return ""
	}
	if got := backendOf(one); got != "gwh_default_a_80" {
		t.Errorf("gateway one's a.example.com goes to %q", got)
	}
	if got := backendOf(two); got != "gwh_default_b_80" {
		t.Errorf("gateway two's a.example.com goes to %q", got)
	}
	want := []MapEntry{{"203.0.113.10:80", "gw_default_one_80"}, {"203.0.113.11:8080", "gw_default_two_8080"}}
	if got := HTTPListenerEntries(twoGateways(), o); !slices.Equal(got, want) {
		t.Errorf("listener entries %v, want %v", got, want)
	}
}

func lookup(es []HTTPMapEntry, key string) string {
	for _, e := range es {
		if e.Key == key {
			return e.Value
		}
	}
	return ""
}

func names(fs []model.Frontend) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}

// A new Gateway with a plain HTTP listener on a new address and port, or
// one gone, is data behind the fixed HTTP listener: the structure stays
// (no reload); in ports mode, or with the HTTP listener off, it is a new
// frontend.
func TestHTTPListenerNewGatewayIsData(t *testing.T) {
	hash := func(cfg model.Config, o Options) string {
		layout, _ := plan.Assign(cfg, nil, true)
		return StructureHash(cfg, layout, o)
	}
	less := twoGateways()
	less.Frontends = less.Frontends[:2]
	onlyTCP := twoGateways()
	onlyTCP.Frontends = onlyTCP.Frontends[1:2]
	off := httpListenerOpts()
	off.Listeners.HTTP = false
	for _, tc := range []struct {
		name     string
		from, to model.Config
		o        Options
		same     bool
	}{
		{"a second Gateway", less, twoGateways(), httpListenerOpts(), true},
		{"a Gateway gone", twoGateways(), less, httpListenerOpts(), true},
		{"the HTTP listener off", less, twoGateways(), off, false},
		{"the first HTTP listener", onlyTCP, less, httpListenerOpts(), true},
		{"the last HTTP listener gone", less, onlyTCP, httpListenerOpts(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hash(tc.from, tc.o) == hash(tc.to, tc.o); got != tc.same {
				t.Errorf("same structure %v, want %v", got, tc.same)
			}
		})
	}
}

// Only keys the listener makes reach the host map through a table's host
// names: a host with a separator and anything else before it is left out.
func TestHTTPListenerHostKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		want string // the hosts map's key; "" none
	}{
		{"203.0.113.10:80|a.example.com", "203.0.113.10:80|a.example.com"},
		{"2001:db8::10:80|*", "2001:db8::10:80|*"},
		{"203.0.113.10:80|+.example.com", ""}, // a one-label wildcard: the onelabel map
		{"a.example.com", "a.example.com"},
		{"x|a.example.com", ""},
		{"127.0.0.1:80|a.example.com", ""},
		{"203.0.113.10:080|a.example.com", ""},
		{"203.0.113.10:0|a.example.com", ""},
		{"203.0.113.10:80|a b", ""},
		{"203.0.113.10:80|a|b", ""},
		{"::ffff:203.0.113.10:80|a.example.com", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &model.HTTP{Actions: []model.HTTPAction{{}}, Hosts: []model.HTTPHost{{Name: tc.name, Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/"}}}}}
			m := HTTPMaps(h)
			got := ""
			if len(m[HTTPHosts]) == 1 {
				got = m[HTTPHosts][0].Key
			}
			if got != tc.want || len(m[HTTPHosts]) > 1 {
				t.Errorf("hosts %v, want key %q", m[HTTPHosts], tc.want)
			}
		})
	}
	m := HTTPMaps(&model.HTTP{Actions: []model.HTTPAction{{}}, Hosts: []model.HTTPHost{{Name: "203.0.113.10:80|+.example.com", Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/"}}}}})
	if len(m[HTTPOneLabel]) != 1 || m[HTTPOneLabel][0].Key != "203.0.113.10:80|example.com" {
		t.Errorf("one-label map %v, want the suffix under the key", m[HTTPOneLabel])
	}
}

// TestGoldenHTTPListener: the fixed HTTP listener's frontend, its maps and
// its listener map, accepted by HAProxy with the files in place.
func TestGoldenHTTPListener(t *testing.T) {
	cfg := twoGateways()
	o := httpListenerOpts()
	layout, _ := plan.Assign(cfg, nil, true)
	got := Config(cfg, layout, o)
	golden.Assert(t, "http-listener.cfg", got)
	fixed := HTTPListenerView(cfg, o).Frontends[0]
	var maps bytes.Buffer
	maps.WriteString("# " + HTTPListenerMapFile(goldenACLDir) + "\n")
	maps.Write(MapContent(HTTPListenerEntries(cfg, o)))
	m := HTTPMaps(fixed.HTTP)
	for _, kind := range HTTPMapKinds {
		maps.WriteString("# " + HTTPMapFile(goldenACLDir, fixed.Name, kind) + "\n")
		maps.Write(HTTPMapContent(m[kind]))
	}
	golden.Assert(t, "http-listener-maps.txt", maps.Bytes())

	dir := t.TempDir()
	writeHTTPMapFiles(t, dir, fixed)
	files := ListenerMaps(cfg, o, dir)
	files[HTTPListenerMapFile(dir)] = MapContent(HTTPListenerEntries(cfg, o))
	for p, b := range files {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, v6 := range []bool{false, true} {
		if err := os.WriteFile(ACLFile(dir, "fe_default_db_5432", v6), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden.HAProxyAccepts(t, bytes.ReplaceAll(got, []byte(goldenACLDir), []byte(dir)))
}

// BenchmarkHTTPListenerView is what the fixed HTTP listener adds to a pass
// with no memo (docs/listeners.md, "Not yet"): the view of N Gateways of
// 10 hosts each, merged into one table, and its shape.
func BenchmarkHTTPListenerView(b *testing.B) {
	for _, n := range []int{100, 1000} {
		cfg := model.Config{}
		for i := range n {
			var hosts []string
			for j := range 10 {
				hosts = append(hosts, "h"+strconv.Itoa(j)+".gw"+strconv.Itoa(i)+".example.com")
			}
			addr := netip.AddrFrom4([4]byte{203, 0, byte(113 + i/250), byte(1 + i%250)})
			cfg.Frontends = append(cfg.Frontends, gatewayHTTP("gw_"+strconv.Itoa(i), addr.String(), 80, "be", hosts...))
		}
		o := httpListenerOpts()
		b.Run(strconv.Itoa(n)+"-gateways", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = HTTPListenerView(cfg, o)
			}
		})
	}
}
