package render

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// TestPassthrough: a terminating HTTP frontend with a Passthrough is
// written behind its splitter (the binds, the server-name lookup, the
// way to the frontend over an abstract socket with the PROXY protocol),
// the frontend keeping its name and TLS but binding that socket only;
// names added, moved or removed change the pass map, never the
// structure (no reload); names that are not exact or backends that are
// not names are left out of the map; without a Passthrough nothing
// changes; HAProxy loads it.
func TestPassthrough(t *testing.T) {
	cfg := terminating(t) // tls_test.go
	f := &cfg.Frontends[0]
	tcp := &model.Backend{Name: "ing_default_pod_443_t", Balance: "roundrobin"}
	cfg.Backends = append(cfg.Backends, tcp)
	routes := func(rs ...model.PassRoute) *model.HTTP {
		return model.Shaped(&model.HTTP{Port: 8443, Passthrough: &model.Passthrough{Routes: rs}})
	}
	o := opts
	o.CertDir, o.ACLDir = goldenCertDir, goldenACLDir
	f.HTTP = model.Shaped(&model.HTTP{Port: 8443})
	layout, _ := plan.Assign(cfg, nil, true)
	without := string(Config(cfg, layout, o))
	if strings.Contains(without, PassFrontend(f.Name)) || strings.Contains(without, "abns@") {
		t.Error("a frontend without a Passthrough got a splitter")
	}
	f.HTTP = routes()
	plain := StructureHash(cfg, layout, o)
	for _, tc := range []struct {
		name    string
		routes  []model.PassRoute
		entries []string
	}{
		{name: "none"},
		{name: "one", routes: []model.PassRoute{{SNI: "pass.example", Backend: tcp.Name}}, entries: []string{"pass.example " + tcp.Name}},
		{name: "moved", routes: []model.PassRoute{{SNI: "other.example", Backend: tcp.Name}}, entries: []string{"other.example " + tcp.Name}},
		{name: "not names", routes: []model.PassRoute{{SNI: "*.wild.example", Backend: tcp.Name}, {SNI: "bad name", Backend: tcp.Name},
			{SNI: "Upper.example", Backend: tcp.Name}, {SNI: "x.example", Backend: "not a name"}, {SNI: "upper.example", Backend: "second"}},
			entries: []string{"upper.example " + tcp.Name}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.HTTP = routes(tc.routes...)
			var got []string
			for _, e := range HTTPMaps(f.HTTP)[HTTPPass] {
				got = append(got, e.Key+" "+e.Value)
			}
			if !slices.Equal(got, tc.entries) {
				t.Errorf("pass map %q, want %q", got, tc.entries)
			}
			var memo HTTPMapsMemo
			if m := memo.Maps(f.HTTP)[HTTPPass]; !slices.Equal(m, HTTPMaps(f.HTTP)[HTTPPass]) {
				t.Errorf("the memo's pass map %v, HTTPMaps's %v", m, HTTPMaps(f.HTTP)[HTTPPass])
			}
			if StructureHash(cfg, layout, o) != plain {
				t.Error("the structure changed: a reload")
			}
		})
	}
	text := string(Config(cfg, layout, o))
	sock := passSocket(f.Name, o)
	for _, line := range []string{
		"frontend " + PassFrontend(f.Name) + "\n\tbind 127.0.0.1:8443\n",
		"\ttcp-request content accept if { req.ssl_hello_type 1 }\n",
		"\tuse_backend %[req.ssl_sni,lower,map_str(" + HTTPMapFile(o.ACLDir, f.Name, HTTPPass) + ")] if",
		"\tdefault_backend " + PassBackend(f.Name) + "\n",
		"backend " + PassBackend(f.Name) + "\n\tserver s " + sock + " send-proxy-v2\n",
		"frontend " + f.Name + "\n\tbind " + sock + " accept-proxy ssl crt-list " + CrtListFile(o.CertDir, f.Name),
	} {
		if !strings.Contains(text, line) {
			t.Errorf("no %q in\n%s", line, text)
		}
	}
	if strings.Count(text, "bind 127.0.0.1:8443") != 1 {
		t.Error("the address is bound twice")
	}
	o2 := o
	o2.ACLDir += "2"
	if passSocket(f.Name, o2) == sock || !strings.HasPrefix(sock, "abns@") || len(sock) > 100 {
		t.Errorf("socket %q: not apart per map directory, or too long", sock)
	}
	if !IsPassBackend(PassBackend(f.Name)) || IsPassBackend(tcp.Name) || IsPassBackend(model.NodesBackend) {
		t.Error("IsPassBackend is not PassBackend's names alone")
	}

	// HAProxy loads it, with the files the driver writes.
	dir := t.TempDir()
	o.CertDir, o.ACLDir = dir, dir
	f.HTTP = routes(model.PassRoute{SNI: "pass.example", Backend: tcp.Name})
	writeTLSFiles(t, cfg, o, map[string][]byte{ClientAuthMapFile(dir): nil}) // clientauth_test.go
	writeHTTPMapFiles(t, dir, *f)
	golden.HAProxyAccepts(t, Config(cfg, layout, o))
}

// writeHTTPMapFiles writes f's HTTP map files under dir, as the driver
// does, for HAProxy to load.
func writeHTTPMapFiles(t testing.TB, dir string, f model.Frontend) {
	t.Helper()
	m := HTTPMaps(f.HTTP)
	for _, kind := range HTTPMapKinds {
		if err := os.WriteFile(HTTPMapFile(dir, f.Name, kind), HTTPMapContent(m[kind]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(ExtAuthLuaFile(dir), ExtAuthLua, 0o644); err != nil { // lua-load reads it (extauth.go)
		t.Fatal(err)
	}
}
