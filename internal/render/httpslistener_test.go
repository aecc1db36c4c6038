package render

import (
	"bytes"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

func httpsListenerOpts() Options {
	o := httpListenerOpts()
	o.CertDir = goldenCertDir
	return o
}

// gatewayHTTPS is gatewayHTTP terminating TLS with one certificate per
// name of certs ("cert name=sni,sni"), the Gateways' ALPN, a listener
// hostname per host.
func gatewayHTTPS(name, addr string, port uint16, be string, hosts []string, certs ...string) model.Frontend {
	f := gatewayHTTP(name, addr, port, be, hosts...)
	f.HTTP.Listeners = slices.Clone(hosts)
	f.TLS = &model.TLS{ALPN: []string{"h2", "http/1.1"}}
	for _, c := range certs {
		n, sni, _ := strings.Cut(c, "=")
		f.TLS.Certificates = append(f.TLS.Certificates, model.Certificate{Name: n, SNI: strings.Split(sni, ","), PEM: []byte(n)})
	}
	slices.SortFunc(f.TLS.Certificates, func(a, b model.Certificate) int { return strings.Compare(a.Name, b.Name) })
	f.TLS.Default = f.TLS.Certificates[0].Name
	return f
}

// TestHTTPSListened: what can share the fixed HTTPS listener, alone and
// beside another listened frontend (the certificate choice by server name
// must stay the one each frontend made on its own).
func TestHTTPSListened(t *testing.T) {
	gw := gatewayHTTPS("gw_b", "203.0.113.10", 443, "be", []string{"a.example.com"}, "cert_a=a.example.com")
	with := func(f model.Frontend, change func(f *model.Frontend)) model.Frontend {
		tls := *f.TLS
		tls.Certificates = slices.Clone(tls.Certificates)
		f.TLS, f.Binds = &tls, slices.Clone(f.Binds)
		change(&f)
		return f
	}
	other := func(certs ...string) model.Frontend { // sorts before gw: taken first
		return gatewayHTTPS("gw_a", "203.0.113.11", 443, "be", []string{"x.example.com"}, certs...)
	}
	verifying := func(f model.Frontend, optional bool) model.Frontend {
		return with(f, func(f *model.Frontend) {
			f.TLS.Client = &model.ClientAuth{CA: "ca_gw", CAPEM: []byte("pem"), Optional: optional}
		})
	}
	o := httpsListenerOpts()
	noMaps := o
	noMaps.ACLDir = ""
	noCerts := o
	noCerts.CertDir = ""
	noHTTP := o
	noHTTP.Listeners.HTTP = false
	for _, tc := range []struct {
		name   string
		fronts []model.Frontend
		o      Options
		want   []string
	}{
		{"alone", []model.Frontend{gw}, o, []string{"gw_b"}},
		{"no certificate directory", []model.Frontend{gw}, noCerts, nil},
		{"HTTP listener off", []model.Frontend{gw}, noHTTP, nil},
		{"plain HTTP", []model.Frontend{with(gw, func(f *model.Frontend) { f.TLS = nil })}, o, nil},
		{"no listener (an Ingress's)", []model.Frontend{with(gw, func(f *model.Frontend) {
			h := *f.HTTP
			h.Listeners = nil
			f.HTTP = &h
		})}, o, nil},
		{"client verification, no CA bundle", []model.Frontend{with(gw, func(f *model.Frontend) { f.TLS.Client = &model.ClientAuth{CA: "ca"} })}, o, nil},
		{"client verification (its lines verify)", []model.Frontend{verifying(gw, false)}, o, []string{"gw_b"}},
		{"client verification with the fallback (the bind's)", []model.Frontend{verifying(gw, true)}, o, nil},
		{"client verification without a map directory", []model.Frontend{verifying(gw, false)}, noMaps, nil},
		{"client verification, a wildcard certificate", []model.Frontend{with(verifying(gw, false), func(f *model.Frontend) { f.TLS.Certificates[0].SNI = []string{"*.example.com"} })}, o, nil},
		{"client verification, a listener name no certificate has", []model.Frontend{with(verifying(gw, false), func(f *model.Frontend) {
			h := *f.HTTP
			h.Listeners = []string{"a.example.com", "b.example.com"}
			f.HTTP = &h
		})}, o, nil},
		{"client verification, any host", []model.Frontend{with(verifying(gw, false), func(f *model.Frontend) {
			h := *f.HTTP
			h.Listeners = []string{model.AnyHost}
			f.HTTP = &h
		})}, o, nil},
		{"one Secret, one frontend verifying (two lines)", []model.Frontend{other("cert_a=x.example.com"), verifying(gw, false)}, o, []string{"gw_a", "gw_b"}},
		{"one Secret, both verifying with one CA", []model.Frontend{verifying(other("cert_a=x.example.com"), false), verifying(gw, false)}, o, []string{"gw_a", "gw_b"}},
		{"one Secret, verifying with two CAs (two lines; the host rules check the issuer)", []model.Frontend{with(verifying(other("cert_a=x.example.com"), false), func(f *model.Frontend) {
			f.TLS.Client = &model.ClientAuth{CA: "ca_other", CAPEM: []byte("pem")}
		}), verifying(gw, false)}, o, []string{"gw_a", "gw_b"}},
		{"two verifying with two CAs", []model.Frontend{with(verifying(other("cert_x=x.example.com"), false), func(f *model.Frontend) {
			f.TLS.Client = &model.ClientAuth{CA: "ca_other", CAPEM: []byte("pem")}
		}), verifying(gw, false)}, o, []string{"gw_a", "gw_b"}},
		{"two verifying with one CA", []model.Frontend{verifying(other("cert_x=x.example.com"), false), verifying(gw, false)}, o, []string{"gw_a", "gw_b"}},
		{"one Secret, its name served unverified by another", []model.Frontend{other("cert_a=a.example.com"), verifying(gw, false)}, o, []string{"gw_a"}},
		{"one Secret, its name verified with another CA", []model.Frontend{with(verifying(other("cert_a=a.example.com,x.example.com"), false), func(f *model.Frontend) {
			f.TLS.Client = &model.ClientAuth{CA: "ca_other", CAPEM: []byte("pem")}
		}), verifying(gw, false)}, o, []string{"gw_a"}},
		{"a certificate's client verification", []model.Frontend{with(gw, func(f *model.Frontend) { f.TLS.Certificates[0].Client = &model.ClientAuth{CA: "ca"} })}, o, nil},
		{"closed hosts", []model.Frontend{with(gw, func(f *model.Frontend) { f.TLS.Closed = []string{"a.example.com"} })}, o, nil},
		{"other ALPN", []model.Frontend{with(gw, func(f *model.Frontend) { f.TLS.ALPN = []string{"http/1.1"} })}, o, nil},
		{"certificate without names", []model.Frontend{with(gw, func(f *model.Frontend) { f.TLS.Certificates[0].SNI = nil })}, o, nil},
		{"invalid name", []model.Frontend{with(gw, func(f *model.Frontend) { f.TLS.Certificates[0].SNI = []string{"bad name"} })}, o, nil},
		{"source ranges", []model.Frontend{with(gw, func(f *model.Frontend) { f.SourceRanges = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")} })}, o, nil},
		{"PROXY protocol", []model.Frontend{with(gw, func(f *model.Frontend) { f.AcceptProxy = true })}, o, nil},
		{"maxconn", []model.Frontend{with(gw, func(f *model.Frontend) { f.MaxConn = 10 })}, o, nil},
		{"every address", []model.Frontend{with(gw, func(f *model.Frontend) { f.Binds[0].Addr = netip.Addr{} })}, o, nil},
		{"the listener's own port", []model.Frontend{with(gw, func(f *model.Frontend) { f.Binds[0].Port = DefaultHTTPSListenerPort })}, o, nil},
		{"passthrough splitter", []model.Frontend{with(gw, func(f *model.Frontend) {
			h := *f.HTTP
			h.Passthrough = &model.Passthrough{}
			f.HTTP = &h
		})}, o, nil},
		{"other names", []model.Frontend{other("cert_x=x.example.com"), gw}, o, []string{"gw_a", "gw_b"}},
		{"one Secret on both", []model.Frontend{other("cert_a=a.example.com"), gw}, o, []string{"gw_a", "gw_b"}},
		{"the same name, another certificate", []model.Frontend{other("cert_x=a.example.com"), gw}, o, []string{"gw_a"}},
		{"a wildcard over its name", []model.Frontend{other("cert_x=*.example.com"), gw}, o, []string{"gw_a"}},
		{"its wildcard over a name", []model.Frontend{other("cert_x=b.example.com"), with(gw, func(f *model.Frontend) { f.TLS.Certificates[0].SNI = []string{"*.example.com"} })}, o, []string{"gw_a"}},
		{"a wildcard one level up", []model.Frontend{other("cert_x=*.com"), gw}, o, []string{"gw_a", "gw_b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := slices.Sorted(maps.Keys(tc.o.HTTPSListened(model.Config{Frontends: tc.fronts})))
			if !slices.Equal(got, tc.want) {
				t.Errorf("HTTPSListened = %v, want %v", got, tc.want)
			}
		})
	}
}

// httpsGateways: two HTTPS Gateways on two addresses with their own
// certificates, a third whose name another's certificate takes (its own
// frontend), a plain HTTP Gateway (the HTTP listener) and a TCP Service.
func httpsGateways(t testing.TB) model.Config {
	cfg := twoGateways()
	root := testcert.CA(t, "root")
	pem := func(names ...string) []byte {
		c := testcert.Issue(t, testcert.Spec{DNS: names}, root)
		return append(c.PEM(), c.KeyPEM(t)...)
	}
	one := gatewayHTTPS("gw_default_one_443", "203.0.113.10", 443, "gwh_default_a_80", []string{"a.example.com", model.AnyHost}, "cert_default_a=a.example.com")
	two := gatewayHTTPS("gw_default_two_8443", "2001:db8::11", 8443, "gwh_default_b_80", []string{"b.example.com"}, "cert_default_b=b.example.com,*.b.example.com")
	three := gatewayHTTPS("gw_default_x_443", "203.0.113.12", 443, "gwh_default_b_80", []string{"a.example.com"}, "cert_default_x=a.example.com")
	for _, f := range []model.Frontend{one, two, three} {
		for i := range f.TLS.Certificates {
			f.TLS.Certificates[i].PEM = pem(f.TLS.Certificates[i].SNI...)
		}
	}
	cfg.Frontends = append(cfg.Frontends, one, two, three)
	slices.SortFunc(cfg.Frontends, func(a, b model.Frontend) int { return strings.Compare(a.Name, b.Name) })
	return cfg
}

// TestGoldenHTTPSListener: the two Gateways that share it are one
// frontend with one crt-list (the controller's default line first, their
// certificates by their names), one table keyed by their listeners; the
// third keeps its own frontend; HAProxy loads it with the files the
// driver writes.
func TestGoldenHTTPSListener(t *testing.T) {
	cfg := httpsGateways(t)
	o := httpsListenerOpts()
	layout, _ := plan.Assign(cfg, nil, true)
	got := Config(cfg, layout, o)
	golden.Assert(t, "https-listener.cfg", got)
	view := HTTPSListenerView(HTTPListenerView(cfg, o), o)
	i := slices.IndexFunc(view.Frontends, func(f model.Frontend) bool { return f.Name == HTTPSListenerFrontend })
	if i < 0 {
		t.Fatal("no fixed HTTPS frontend in the view")
	}
	fixed := view.Frontends[i]
	var files bytes.Buffer
	files.WriteString("# " + CrtListFile(goldenCertDir, fixed.Name) + "\n")
	files.Write(CrtListContent(o, fixed))
	files.WriteString("# " + HTTPSListenerMapFile(goldenACLDir) + "\n")
	files.Write(MapContent(HTTPSListenerEntries(cfg, o)))
	m := HTTPMaps(fixed.HTTP)
	for _, kind := range []string{HTTPHosts, HTTPListeners} {
		files.WriteString("# " + HTTPMapFile(goldenACLDir, fixed.Name, kind) + "\n")
		files.Write(HTTPMapContent(m[kind]))
	}
	golden.Assert(t, "https-listener-files.txt", files.Bytes())
	for _, want := range []string{"frontend gw_default_x_443", "bind 203.0.113.12:443 transparent ssl crt-list",
		"bind :15443 transparent ssl crt-list " + goldenCertDir + "/_https_listeners.crtlist alpn h2,http/1.1"} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("config lacks %q", want)
		}
	}
	for _, never := range []string{"frontend gw_default_one_443", "frontend gw_default_two_8443", "2001:db8::11"} {
		if bytes.Contains(got, []byte(never)) {
			t.Errorf("config has %q", never)
		}
	}

	acl, certDir := t.TempDir(), t.TempDir()
	ho := o
	ho.ACLDir, ho.CertDir = acl, certDir
	hview := HTTPSListenerView(HTTPListenerView(cfg, ho), ho)
	for _, f := range hview.Frontends {
		if f.HTTP != nil {
			writeHTTPMapFiles(t, acl, f)
		}
	}
	files2 := ListenerMaps(cfg, ho, acl)
	files2[HTTPListenerMapFile(acl)] = MapContent(HTTPListenerEntries(cfg, ho))
	files2[HTTPSListenerMapFile(acl)] = MapContent(HTTPSListenerEntries(cfg, ho))
	files2[ClientAuthMapFile(acl)] = nil // gw_default_x_443's rules read it (the listener's do not)
	files2[IssuerMapFile(acl)] = nil
	for p, b := range files2 {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, v6 := range []bool{false, true} {
		if err := os.WriteFile(ACLFile(acl, "fe_default_db_5432", v6), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	def := testcert.Issue(t, testcert.Spec{DNS: []string{"default.invalid"}}, testcert.CA(t, "def"))
	writeTLSFiles(t, model.Config{Frontends: slices.DeleteFunc(slices.Clone(hview.Frontends), func(f model.Frontend) bool { return f.Name == HTTPSListenerFrontend })}, ho, map[string][]byte{
		DefaultCertFile(certDir, HTTPSListenerFrontend): append(def.PEM(), def.KeyPEM(t)...),
		CrtListFile(certDir, HTTPSListenerFrontend):     CrtListContent(ho, hview.Frontends[i]),
	})
	for _, c := range hview.Frontends[i].TLS.Certificates {
		if err := os.WriteFile(CertFile(certDir, c.Name), c.PEM, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	text := bytes.ReplaceAll(got, []byte(goldenACLDir), []byte(acl))
	golden.HAProxyAccepts(t, bytes.ReplaceAll(text, []byte(goldenCertDir), []byte(certDir)))
}

// TestHTTPSListenerVerifyingLines: a frontend verifying its clients
// behind the fixed HTTPS listener has its certificate's line verify with
// its CA, its exact names checked per host (HostRequired under the
// listener's name), and the other frontends' line verifies nothing:
// one Secret, served verified to one and unverified to two others, is
// two lines.
func TestHTTPSListenerVerifyingLines(t *testing.T) {
	o := httpsListenerOpts()
	a := gatewayHTTPS("gw_a", "203.0.113.10", 443, "be", []string{"a.example.com"}, "cert_b=a.example.com")
	a.TLS.Client = &model.ClientAuth{CA: "ca_gw_a", CAPEM: []byte("pem")}
	b := gatewayHTTPS("gw_b", "203.0.113.11", 443, "be", []string{"b.example.com"}, "cert_b=b.example.com")
	x := gatewayHTTPS("gw_x", "203.0.113.12", 443, "be", []string{"x.example.com"}, "cert_b=x.example.com")
	fixed, in, ok := HTTPSListenerFront(model.Config{Frontends: []model.Frontend{a, b, x}}, o)
	if !ok || !in["gw_a"] || !in["gw_b"] || !in["gw_x"] {
		t.Fatalf("listened %v (%v), want all three", in, ok)
	}
	var lines []string
	for _, e := range CrtListEntries(o, fixed) {
		lines = append(lines, e.Line())
	}
	want := []string{
		DefaultCertFile(o.CertDir, HTTPSListenerFrontend) + " !*",
		CertFile(o.CertDir, "cert_b") + " b.example.com x.example.com",
		CertFile(o.CertDir, ListenerCertName(a.TLS, a.TLS.Certificates[0])) + " [verify required no-ca-names ca-file " + CAFile(o.CertDir, "ca_gw_a") + "] a.example.com",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("crt-list:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	got := HostClientAuthEntries(o, fixed)
	if wantE := []MapEntry{{HTTPSListenerFrontend + "/a.example.com", HostRequired + "/" + caDigest(a.TLS.Client.CAPEM)}}; !slices.Equal(got, wantE) {
		t.Errorf("host entries %v, want %v", got, wantE)
	}
}

// TestHTTPSListenedVerificationTurnsOn: two frontends served one
// Secret's names alike behind the fixed HTTPS listener; one turns client
// verification on (a line of its own, ListenerCertName, clashing with
// the other's on their shared names): the one that changed leaves, the
// other keeps the listener, whichever sorts first.
func TestHTTPSListenedVerificationTurnsOn(t *testing.T) {
	o := httpsListenerOpts()
	for _, verifier := range []string{"gw_a", "gw_b"} {
		t.Run(verifier, func(t *testing.T) {
			a := gatewayHTTPS("gw_a", "203.0.113.10", 443, "be", []string{"a.example.com"}, "cert_s=a.example.com,b.example.com")
			b := gatewayHTTPS("gw_b", "203.0.113.10", 8443, "be", []string{"b.example.com"}, "cert_s=a.example.com,b.example.com")
			cfg := model.Config{Frontends: []model.Frontend{a, b}}
			if in := o.HTTPSListened(cfg); !in["gw_a"] || !in["gw_b"] {
				t.Fatalf("before: %v, want both", in)
			}
			cfg.HTTPSHeld = HTTPSHeldOf(cfg, o)
			for i := range cfg.Frontends {
				if cfg.Frontends[i].Name == verifier {
					cfg.Frontends[i].TLS.Client = &model.ClientAuth{CA: "ca_x", CAPEM: []byte("pem")}
				}
			}
			in := o.HTTPSListened(cfg)
			if in[verifier] || len(in) != 1 {
				t.Errorf("%s verifying: listened %v, want the other alone", verifier, in)
			}
		})
	}
}
