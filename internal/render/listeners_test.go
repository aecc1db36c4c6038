package render

import (
	"bytes"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// listened is restricted() on addresses of their own (two addresses, both
// families, for the web Service), plus a routed frontend, which keeps a
// frontend of its own in tproxy mode.
func listened() model.Config {
	cfg := restricted()
	cfg.Frontends[0].Binds = []model.Bind{{Addr: ap("192.0.2.10"), Port: 80, Transparent: true},
		{Addr: ap("192.0.2.11"), Port: 80, Transparent: true}, {Addr: ap("2001:db8::10"), Port: 80, Transparent: true}}
	cfg.Frontends[1].Binds = []model.Bind{{Addr: ap("192.0.2.10"), Port: 5432, Transparent: true}}
	r := routed()
	cfg.Frontends = append(cfg.Frontends, r.Frontends...)
	cfg.Backends = append(cfg.Backends, r.Backends...)
	return cfg
}

func tproxyOpts() Options {
	o := opts
	o.ACLDir = goldenACLDir
	o.Listeners = Listeners{Mode: ListenersTProxy, Port: 15080}
	return o
}

func TestGoldenListeners(t *testing.T) {
	cfg := listened()
	layout, _ := plan.Assign(cfg, nil, true)
	o := tproxyOpts()
	got := Config(cfg, layout, o)
	golden.Assert(t, "listeners-tproxy.cfg", got)
	listen, proxy := ListenerEntries(cfg, o)
	golden.Assert(t, "listeners.map", MapContent(listen))
	golden.Assert(t, "proxy.map", MapContent(proxy))
	// The same model in ports mode is the per-port rendering, unchanged.
	ports := o
	ports.Listeners.Mode = ListenersPorts
	golden.Assert(t, "listeners-ports.cfg", Config(cfg, layout, ports))
	if l, p := ListenerEntries(cfg, ports); l != nil || p != nil {
		t.Errorf("ports mode has listener entries %v %v", l, p)
	}

	listenerConfigAccepted(t, cfg, got)
}

// listenerConfigAccepted checks that HAProxy accepts got, cfg rendered in
// tproxy mode (tproxyOpts), with every file it reads written where the
// check finds them: the listener's four maps, the ACL files, route maps.
func listenerConfigAccepted(t *testing.T, cfg model.Config, got []byte) {
	t.Helper()
	o := tproxyOpts()
	dir := t.TempDir()
	files := ListenerMaps(cfg, o, dir)
	for _, f := range cfg.Frontends {
		for _, v6 := range []bool{false, true} {
			files[ACLFile(dir, f.Name, v6)] = ACLFileContent(f, v6)
		}
		for i, r := range f.Routes {
			files[RouteMapFile(dir, f.Name, i)] = RouteMapContent(r)
		}
	}
	for p, b := range files {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden.HAProxyAccepts(t, bytes.ReplaceAll(got, []byte(goldenACLDir), []byte(dir)))
}

// TestListenerStructure: behind the listener, addresses and ports are map
// data, not structure; whether a Service is restricted is (its backend's
// rule).
func TestListenerStructure(t *testing.T) {
	o := tproxyOpts()
	cfg := listened()
	layout, _ := plan.Assign(cfg, nil, true)
	h := StructureHash(cfg, layout, o)
	more := listened()
	more.Frontends[0].Binds = append(more.Frontends[0].Binds, model.Bind{Addr: ap("192.0.2.12"), Port: 8080, Transparent: true})
	more.Frontends[1].AcceptProxy = false
	if StructureHash(more, layout, o) != h {
		t.Errorf("a new address and port, and the PROXY protocol, changed the structure in tproxy mode")
	}
	if StructureHash(more, layout, opts) == StructureHash(cfg, layout, opts) {
		t.Errorf("a new address kept the structure in ports mode")
	}
	open := listened()
	open.Frontends[0].SourceRanges = nil
	if StructureHash(open, layout, o) == h {
		t.Errorf("a Service no longer restricted kept the structure")
	}
}

func TestListened(t *testing.T) {
	o := tproxyOpts()
	fe := func(binds ...model.Bind) model.Frontend {
		return model.Frontend{Name: "fe", Backend: "be", Binds: binds}
	}
	b := func(a string, p uint16) model.Bind { return model.Bind{Addr: ap(a), Port: p} }
	noDir := o
	noDir.ACLDir = ""
	for _, tc := range []struct {
		name string
		o    Options
		f    model.Frontend
		want bool
	}{
		{"ipv4 and ipv6 addresses", o, fe(b("192.0.2.10", 80), b("2001:db8::1", 80)), true},
		{"ports mode", opts, fe(b("192.0.2.10", 80)), false},
		{"no map directory", noDir, fe(b("192.0.2.10", 80)), false},
		{"every address", o, fe(model.Bind{Port: 80}), false},
		{"loopback", o, fe(b("127.0.0.1", 80)), false},
		{"ipv6 loopback", o, fe(b("::1", 80)), false},
		{"ipv4-mapped", o, fe(b("::ffff:192.0.2.1", 80)), false},
		{"ipv4-compatible", o, fe(b("::c000:201", 80)), false},
		{"link-local", o, fe(b("fe80::1", 80)), false},
		{"multicast", o, fe(b("224.0.0.1", 80)), false},
		{"the listener's own port", o, fe(b("192.0.2.10", 15080)), false},
		{"one bad bind of two", o, fe(b("192.0.2.10", 80), b("0.0.0.0", 80)), false},
		{"routed by TLS server name", o, model.Frontend{Name: "fe", Binds: []model.Bind{b("192.0.2.10", 443)}, Routes: []model.Route{{SNI: "a.example.com", Backends: []model.WeightedBackend{{Name: "be", Weight: 1}}}}}, true},
		{"TCP routes", o, model.Frontend{Name: "fe", Binds: []model.Bind{b("192.0.2.10", 443)}, Routes: []model.Route{{Backends: []model.WeightedBackend{{Name: "be", Weight: 1}}}}}, true},
		{"no binds", o, fe(), false},
		{"terminates TLS", o, model.Frontend{Name: "fe", Backend: "be", Binds: []model.Bind{b("192.0.2.10", 443)}, TLS: &model.TLS{}}, false},
	} {
		if got := tc.o.Listened(tc.f); got != tc.want {
			t.Errorf("%s: Listened = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestListenerKey(t *testing.T) {
	for _, tc := range []struct {
		a    string
		p    uint16
		want string
	}{
		{"192.0.2.10", 80, "192.0.2.10:80"},
		{"2001:db8::10", 443, "2001:db8::10:443"},
		{"2001:db8:0:1:0:0:0:1", 8080, "2001:db8:0:1::1:8080"},
	} {
		if got := ListenerKey(ap(tc.a), tc.p); got != tc.want {
			t.Errorf("ListenerKey(%s, %d) = %q, want %q", tc.a, tc.p, got, tc.want)
		}
		if i := strings.LastIndexByte(tc.want, ':'); tc.want[:i] != ap(tc.a).String() {
			t.Errorf("the last colon of %q does not split the address", tc.want)
		}
	}
}

// FuzzListenerKey: whatever address and port a frontend carries, a bind
// the listener takes has a key that is one word (no map syntax can ride
// in it), whose last colon gives back the very address and port.
func FuzzListenerKey(f *testing.F) {
	f.Add([]byte{192, 0, 2, 10}, uint16(80))
	f.Add([]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10}, uint16(443))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1}, uint16(80))
	o := tproxyOpts()
	f.Fuzz(func(t *testing.T, raw []byte, port uint16) {
		a, ok := netip.AddrFromSlice(raw)
		if !ok {
			return
		}
		fe := model.Frontend{Name: "fe", Backend: "be", Binds: []model.Bind{{Addr: a, Port: port}}}
		if !o.Listened(fe) {
			return
		}
		k := ListenerKey(a, port)
		if strings.ContainsAny(k, " \t\r\n#\\") {
			t.Fatalf("key %q is not one word", k)
		}
		i := strings.LastIndexByte(k, ':')
		back, err := netip.ParseAddr(k[:i])
		if err != nil || back != a || k[i+1:] != strconv.Itoa(int(port)) {
			t.Fatalf("key %q does not give back %s and %d", k, a, port)
		}
	})
}
