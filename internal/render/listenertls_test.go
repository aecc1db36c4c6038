package render

import (
	"bytes"
	"slices"
	"strconv"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// tlsListener is a gateway TLS passthrough listener's frontend on addr
// and port: a route per server name, each to its one backend.
func tlsListener(name string, port uint16, addr string, sniToBackend ...string) model.Frontend {
	f := model.Frontend{Name: name, Binds: []model.Bind{{Addr: ap(addr), Port: port, Transparent: true}}}
	for i := 0; i+1 < len(sniToBackend); i += 2 {
		f.Routes = append(f.Routes, model.Route{SNI: sniToBackend[i], Backends: []model.WeightedBackend{{Name: sniToBackend[i+1], Weight: 1}}})
	}
	return f
}

// TestListenerTLSEntries: a TLS passthrough listener's keys are in the
// TLS keys map (and in no other), its names under each key lead to route
// ids whose backends are in the backends map; a name that is no valid
// server name reaches no map; a route without a name is "KEY/*" (beside
// named ones: a listener whose routes all take any name is a TCP one); ids of
// TCP and TLS routes differ; the first frontend with a key keeps it.
func TestListenerTLSEntries(t *testing.T) {
	o := tproxyOpts()
	a := tlsListener("gw_a_443", 443, "192.0.2.30", "A.example.com", "be_a", "*.example.com", "be_w",
		"bad name", "be_bad", "x.example.com\nfoo 1", "be_bad", "a.example.com", "be_second")
	b := tlsListener("gw_b_443", 443, "192.0.2.30", "b.example.com", "be_b") // a's key: a keeps it
	c := tlsListener("gw_c_8443", 8443, "2001:db8::30", "c.example.com", "be_c", "", "be_any")
	cfg := model.Config{Frontends: []model.Frontend{a, b, c, tcpListener("gw_t_9000", 9000, "192.0.2.30")}}

	keys, names := ListenerTLSEntries(cfg, o)
	wantKeys := []MapEntry{{"192.0.2.30:443", "gw_a_443"}, {"2001:db8::30:8443", "gw_c_8443"}}
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("keys %v, want %v", keys, wantKeys)
	}
	var gotNames []string
	ids := map[string]int64{}
	for _, e := range names {
		gotNames = append(gotNames, e.Key)
		id, err := strconv.ParseInt(e.Value, 10, 64)
		if err != nil || id <= 0 {
			t.Fatalf("%s: id %q", e.Key, e.Value)
		}
		ids[e.Key] = id
	}
	wantNames := []string{"192.0.2.30:443/*.example.com", "192.0.2.30:443/a.example.com", "2001:db8::30:8443/*",
		"2001:db8::30:8443/c.example.com"}
	if !slices.Equal(gotNames, wantNames) {
		t.Errorf("names %q, want %q", gotNames, wantNames)
	}
	routes, backends := ListenerRouteEntries(cfg, o)
	if len(routes) != 1 || routes[0].Key != "192.0.2.30:9000" {
		t.Errorf("routes map %v: want the TCP listener's key alone", routes)
	}
	tcpID := ListenerRouteIDs(cfg, o)["gw_t_9000"]
	backendOf := func(id int64) string {
		lo := strconv.FormatInt(id*pickRange, 10) + ":" + strconv.FormatInt(id*pickRange+pickRange-1, 10)
		for _, e := range backends {
			if e.Key == lo {
				return e.Value
			}
		}
		return ""
	}
	for key, want := range map[string]string{"192.0.2.30:443/a.example.com": "be_a", "192.0.2.30:443/*.example.com": "be_w",
		"2001:db8::30:8443/*": "be_any", "2001:db8::30:8443/c.example.com": "be_c"} {
		if ids[key] == tcpID {
			t.Errorf("%s: the TCP listener's id %d", key, tcpID)
		}
		if got := backendOf(ids[key]); got != want {
			t.Errorf("%s: id %d draws %q, want %q", key, ids[key], got, want)
		}
	}
	for _, e := range append(slices.Clone(names), backends...) {
		if bytes.Contains([]byte(e.Value), []byte("bad")) || bytes.Contains([]byte(e.Key), []byte("bad")) {
			t.Errorf("an invalid server name reached a map: %v", e)
		}
	}
	if l, _ := ListenerEntries(cfg, o); len(l) != 0 {
		t.Errorf("TLS keys in the one-backend map: %v", l)
	}
	if k, n := ListenerTLSEntries(cfg, opts); k != nil || n != nil {
		t.Errorf("ports mode has TLS entries %v %v", k, n)
	}
}

// TestListenerTLSRulesWaitOnlyForTheirKeys: in the listener's text, the
// accept of every key not in the TLS keys map comes before any rule that
// reads the ClientHello, and the inspect delay is the frontends' default.
func TestListenerTLSRulesWaitOnlyForTheirKeys(t *testing.T) {
	var b bytes.Buffer
	writeListener(func(s ...string) {
		for i, x := range s {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(x)
		}
		b.WriteByte('\n')
	}, tproxyOpts())
	text := b.String()
	accept := bytes.Index(b.Bytes(), []byte("tcp-request content accept unless { var(sess.hks_listen),map_str("+ListenerTLSMapFile(tproxyOpts().ACLDir)+") -m found }"))
	hello := bytes.Index(b.Bytes(), []byte("req.ssl_hello_type 1"))
	if accept < 0 || hello < 0 || accept > hello {
		t.Errorf("the other keys' accept (at %d) does not come before the ClientHello's wait (at %d):\n%s", accept, hello, text)
	}
	if !bytes.Contains(b.Bytes(), []byte("tcp-request inspect-delay 5s\n")) {
		t.Errorf("no inspect delay of %v:\n%s", model.DefaultInspectDelay, text)
	}
}
