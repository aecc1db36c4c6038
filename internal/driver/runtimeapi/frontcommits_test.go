package runtimeapi

import (
	"maps"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// TestFrontClientFilesOf: the files under the one-kind rule
// (frontcommits.go) are the certificates of every verifying crt-list
// line and their CA files: a verifying frontend's lines, and a host's
// own line (an Ingress's auth-tls-*) on a frontend that verifies no one.
func TestFrontClientFilesOf(t *testing.T) {
	ca := func(name string) *model.ClientAuth {
		return &model.ClientAuth{CA: name, CAPEM: []byte("pem")}
	}
	for _, tc := range []struct {
		name               string
		tls                *model.TLS
		wantCerts, wantCAs []string
	}{
		{name: "no verification", tls: &model.TLS{Certificates: []model.Certificate{{Name: "cert_a"}}}},
		{name: "the frontend verifies", tls: &model.TLS{Client: ca("ca_gw"),
			Certificates: []model.Certificate{{Name: "cert_a"}, {Name: "cert_b"}}},
			wantCerts: []string{"d/cert_a.pem", "d/cert_b.pem"}, wantCAs: []string{"d/ca_gw.pem"}},
		{name: "a host verifies on its own line", tls: &model.TLS{
			Certificates: []model.Certificate{{Name: "cert_a"}, {Name: "cert_h", Client: ca("ca_h")}}},
			wantCerts: []string{"d/cert_h.pem"}, wantCAs: []string{"d/ca_h.pem"}},
		{name: "a host's own CA over the frontend's", tls: &model.TLS{Client: ca("ca_gw"),
			Certificates: []model.Certificate{{Name: "cert_a"}, {Name: "cert_h", Client: ca("ca_h")}}},
			wantCerts: []string{"d/cert_a.pem", "d/cert_h.pem"}, wantCAs: []string{"d/ca_gw.pem", "d/ca_h.pem"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := frontClientFilesOf(render.Options{CertDir: "d"}, model.Config{Frontends: []model.Frontend{{Name: "fe", TLS: tc.tls}}})
			if c := slices.Sorted(maps.Keys(got.certs)); !slices.Equal(c, tc.wantCerts) {
				t.Errorf("certificates %v, want %v", c, tc.wantCerts)
			}
			if c := slices.Sorted(maps.Keys(got.cas)); !slices.Equal(c, tc.wantCAs) {
				t.Errorf("CA files %v, want %v", c, tc.wantCAs)
			}
		})
	}
}

// TestFrontClientFilesOfListener: a frontend verifying behind the fixed
// HTTPS listener has its lines there under names of their own
// (render.ListenerCertName): those certificates are under the one-kind
// rule too, not only the frontend's own names.
func TestFrontClientFilesOfListener(t *testing.T) {
	o := render.Options{ACLDir: "/a", CertDir: "/c", Listeners: render.Listeners{Mode: render.ListenersTProxy, Port: 15080, HTTP: true}}
	if !o.HTTPSListener() {
		t.Fatal("the options have no HTTPS listener")
	}
	cert := model.Certificate{Name: "cert_a", SNI: []string{"a.example.com"}, PEM: []byte("pem")}
	tls := &model.TLS{Client: &model.ClientAuth{CA: "ca_gw", CAPEM: []byte("pem")}, Certificates: []model.Certificate{cert}, ALPN: []string{"h2", "http/1.1"}}
	f := model.Frontend{Name: "gw_a", Binds: []model.Bind{{Addr: netip.MustParseAddr("203.0.113.10"), Port: 443}}, TLS: tls,
		HTTP: model.Shaped(&model.HTTP{Port: 443, Listeners: []string{"a.example.com"}, Hosts: []model.HTTPHost{{Name: "a.example.com"}}})}
	cfg := model.Config{Frontends: []model.Frontend{f}}
	if !o.HTTPSListened(cfg)["gw_a"] {
		t.Fatal("gw_a is not behind the listener")
	}
	got := frontClientFilesOf(o, cfg)
	if line := render.CertFile("/c", render.ListenerCertName(tls, cert)); !got.certs[line] {
		t.Errorf("certificates %v, want the listener's line %s among them", slices.Sorted(maps.Keys(got.certs)), line)
	}
}

// TestPassCopiesNoServiceFrontends (issue 29): what a pass asks of every
// frontend for the verifying lines (verifyingFronts, twice a pass) and
// the frontends its HTTP maps are made of (httpFrontends) copy none of
// 10,000 Services' frontends: each such copy was ~3 MB, and a new
// Service's pass at 10,000 allocated 13 MB against 6.5 before the HTTPS
// listener (BENCHMARKS.md). Fails with either copy back.
func TestPassCopiesNoServiceFrontends(t *testing.T) {
	o := render.Options{ACLDir: "/a", CertDir: "/c", Listeners: render.Listeners{Mode: render.ListenersTProxy, Port: 15080, HTTP: true}}
	var cfg model.Config
	for i := range 10000 {
		addr := netip.AddrFrom4([4]byte{10, 0, byte(i / 250), byte(1 + i%250)})
		cfg.Frontends = append(cfg.Frontends, model.Frontend{Name: "svc_" + strconv.Itoa(i), Backend: "be", Binds: []model.Bind{{Addr: addr, Port: 80}}})
	}
	cert := model.Certificate{Name: "cert_a", SNI: []string{"a.example.com"}, PEM: []byte("pem")}
	cfg.Frontends = append(cfg.Frontends, model.Frontend{Name: "gw_a", Binds: []model.Bind{{Addr: netip.MustParseAddr("203.0.113.10"), Port: 443}},
		TLS:  &model.TLS{Client: &model.ClientAuth{CA: "ca_gw", CAPEM: []byte("pem")}, Certificates: []model.Certificate{cert}, ALPN: []string{"h2", "http/1.1"}},
		HTTP: model.Shaped(&model.HTTP{Port: 443, Listeners: []string{"a.example.com"}, Hosts: []model.HTTPHost{{Name: "a.example.com"}}})})
	cfg = o.ClaimHTTPS(cfg)
	var names []string
	for f := range verifyingFronts(o, cfg) {
		names = append(names, f.Name)
	}
	if want := []string{"gw_a", render.HTTPSListenerFrontend}; !slices.Equal(names, want) {
		t.Fatalf("verifying frontends %v, want %v", names, want)
	}
	if h := httpFrontends(cfg.Frontends); len(h) != 1 || h[0].Name != "gw_a" {
		t.Fatalf("HTTP frontends %d, want gw_a alone", len(h))
	}
	const bound = 256 << 10 // a copy of the frontends is over ten times this
	for name, f := range map[string]func(){
		"verifyingFronts": func() {
			for f := range verifyingFronts(o, cfg) {
				_ = f
			}
		},
		"httpFrontends": func() { _ = httpFrontends(cfg.Frontends) },
	} {
		if b := allocated(f); b > bound {
			t.Errorf("%s allocated %d bytes among 10,000 Services' frontends, want at most %d", name, b, bound)
		}
	}
}

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
