package ingress

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/objects"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// load reads testdata/name.yaml into an Input; a kubernetes.io/tls
// Secret without data gets a fresh certificate for the names of its
// test/dns annotation.
func load(t *testing.T, name string) Input {
	t.Helper()
	var set objects.Set
	for _, file := range []string{"services", name} {
		f, err := os.Open(filepath.Join("testdata", file+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		s, errs := objects.Load(f, file)
		f.Close()
		if errs = append(errs, set.Merge(s)...); len(errs) > 0 {
			t.Fatal(errs)
		}
	}
	for _, s := range set.Secrets {
		if dns := s.Annotations["test/dns"]; dns != "" && s.Data == nil {
			c := testcert.Issue(t, testcert.Spec{CN: s.Name, DNS: strings.Split(dns, ",")}, testcert.Cert{})
			s.Data = map[string][]byte{corev1.TLSCertKey: c.PEM(), corev1.TLSPrivateKeyKey: c.KeyPEM(t)}
		}
		if s.Annotations["test/ca"] == "true" {
			// A CA bundle (backend TLS), beside a certificate if any.
			if s.Data == nil {
				s.Data = map[string][]byte{}
			}
			s.Data[CAKey] = testcert.CA(t, s.Name).PEM()
		}
	}
	in := Input{Classes: set.IngressClasses, Ingresses: set.Ingresses, Services: set.Services}
	for _, s := range set.EndpointSlices {
		in.Slices = append(in.Slices, desired.SliceOf(s))
	}
	in.Certs, in.Problems = Certificates(set.Secrets, time.Now())
	in.Auth = AuthFiles(set.Secrets)
	in.CAs, in.CAProblems = CAFiles(set.Secrets)
	return in
}

var lb = []netip.Addr{netip.MustParseAddr("127.0.0.1")}

func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		name     string
		input    string // testdata/INPUT.yaml; "": the name
		previous string // compiled first, with the same memo
		opts     Options
	}{
		{name: "basic", opts: Options{Class: "haproxy", Addresses: lb}},
		{name: "classes", opts: Options{Class: "haproxy"}},
		{name: "classes-any", input: "classes", opts: Options{}},
		{name: "tls", opts: Options{Class: "haproxy", Addresses: lb, DefaultCert: Key{"default", "fallback"}}},
		{name: "tls-ports", opts: Options{Class: "haproxy", Addresses: lb, HTTPPort: 8080, HTTPSPort: 8443}},
		{name: "canary", opts: Options{Class: "haproxy", Addresses: lb}},
		{name: "annotations", opts: Options{Class: "haproxy", Addresses: lb}},
		{name: "refused", previous: "refused-before", opts: Options{Class: "haproxy", Addresses: lb}},
		{name: "www", opts: Options{Class: "haproxy", Addresses: lb}},
		{name: "routing", opts: Options{Class: "haproxy", Addresses: lb, HTTPPort: 8080}},
		// HAProxy 3.4+: the connect timeouts are the paths' map data, no
		// backends of their own (connect.go).
		{name: "routing-connect", input: "routing", opts: Options{Class: "haproxy", Addresses: lb, HTTPPort: 8080, ConnectPerRequest: true}},
		{name: "closing", previous: "closing-before", opts: Options{Class: "haproxy", Addresses: lb}},
		{name: "access", previous: "access-before", opts: Options{Class: "haproxy", Addresses: lb}},
		{name: "auth", opts: Options{Class: "haproxy", Addresses: lb}},
		{name: "backendtls", opts: Options{Class: "haproxy", Addresses: lb}},
		{name: "cookie", opts: Options{Class: "haproxy", Addresses: lb}},
		{name: "retry", opts: Options{Class: "haproxy", Addresses: lb}},
		{name: "migrate", opts: Options{Class: "haproxy-k8s-sync", Addresses: lb}},
		{name: "authtls", opts: Options{Class: "haproxy", Addresses: lb}},
		{name: "passthrough", opts: Options{Class: "haproxy", Addresses: lb}},
		{name: "extauth-ns", opts: Options{Class: "haproxy", Addresses: lb}},
		{name: "oauth", opts: Options{Class: "haproxy", Addresses: lb}},
		{name: "proxyrewrite", opts: Options{Class: "haproxy", Addresses: lb}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Last = &Memo{}
			if tc.previous != "" {
				Compile(load(t, tc.previous), opts)
			}
			input := cmp.Or(tc.input, tc.name)
			golden.Assert(t, tc.name+".golden", dump(Compile(load(t, input), opts)))
		})
	}
}

// dump writes a Result for reading: frontends, their tables and
// certificates (names, never PEM), backends, what is served, Events.
func dump(r Result) []byte {
	var b bytes.Buffer
	for _, f := range r.Frontends {
		fmt.Fprintf(&b, "frontend %s binds %v\n", f.Name, f.Binds)
		if f.TLS != nil {
			fmt.Fprintf(&b, "  tls default %s alpn %v\n", f.TLS.Default, f.TLS.ALPN)
			for _, c := range f.TLS.Certificates {
				fmt.Fprintf(&b, "    cert %s sni %v\n", c.Name, c.SNI)
				if a := c.Client; a != nil { // authtls.go
					fmt.Fprintf(&b, "      client ca %s optional %v bundle %v\n", a.CA, a.Optional, len(a.CAPEM) > 0)
				}
			}
			if len(f.TLS.Closed) > 0 {
				fmt.Fprintf(&b, "    closed %v\n", f.TLS.Closed)
			}
		}
		dumpHTTP(&b, f.HTTP)
	}
	for _, be := range r.Backends {
		fmt.Fprintf(&b, "backend %s servers", be.Name)
		if be.H2C {
			b.WriteString(" (h2c)")
		}
		if c := be.Cookie; c != nil {
			fmt.Fprintf(&b, " (cookie %+v)", *c)
		}
		if be.Balance != "roundrobin" {
			fmt.Fprintf(&b, " (balance %q)", be.Balance)
		}
		if be.TimeoutConnect != 0 {
			fmt.Fprintf(&b, " (timeout connect %v)", be.TimeoutConnect)
		}
		if be.RetryOn != "" {
			fmt.Fprintf(&b, " (retry-on %q retries %d idempotent %v)", be.RetryOn, be.Retries, be.RetryIdempotent)
		}
		if t := be.TLS; t != nil {
			// Names and switches, never PEM.
			fmt.Fprintf(&b, " (tls sni=%q verifyhost=%q noverify=%v ca=%v cert=%v valid=%v)", t.SNI, t.VerifyHost, t.NoVerify,
				t.CA != "", t.Cert != "", model.ValidBackendTLS(t))
			if t.MinVer != "" || t.MaxVer != "" || t.Ciphers != "" || t.CipherSuites != "" {
				fmt.Fprintf(&b, " (versions %q-%q ciphers %q suites %q)", t.MinVer, t.MaxVer, t.Ciphers, t.CipherSuites)
			}
		}
		for _, s := range be.Servers {
			fmt.Fprintf(&b, " %s", netip.AddrPortFrom(s.Addr, s.Port))
		}
		b.WriteString("\n")
	}
	for _, k := range slices.SortedFunc(maps.Keys(r.Served), func(a, b Key) int { return strings.Compare(a.String(), b.String()) }) {
		fmt.Fprintf(&b, "served %s %v\n", k, r.Served[k])
	}
	for _, e := range r.Events {
		fmt.Fprintf(&b, "event %s %s: %s\n", e.Ingress, e.Reason, e.Message)
	}
	for _, v := range slices.Sorted(maps.Keys(r.Annotations)) {
		for _, k := range slices.Sorted(maps.Keys(r.Annotations[v])) {
			fmt.Fprintf(&b, "annotation %s %s: %d\n", v, k, r.Annotations[v][k])
		}
	}
	return b.Bytes()
}

func dumpHTTP(b *bytes.Buffer, h *model.HTTP) {
	fmt.Fprintf(b, "  http port %d, action 0 %s\n", h.Port, action(h.Actions[0]))
	for _, host := range h.Hosts {
		fmt.Fprintf(b, "  host %s\n", host.Name)
		for _, r := range host.Rules {
			fmt.Fprintf(b, "    %s %s", r.PathType, r.Path)
			for _, m := range r.Headers {
				fmt.Fprintf(b, " [%s=%s]", m.Name, m.Value)
			}
			fmt.Fprintf(b, " -> %s\n", action(h.Actions[r.Action]))
		}
	}
	if p := h.Passthrough; p != nil && len(p.Routes) > 0 { // passthrough.go
		for _, r := range p.Routes {
			fmt.Fprintf(b, "  passthrough %s -> %s\n", r.SNI, r.Backend)
		}
	}
}

func action(a model.HTTPAction) string {
	var ext string
	if x := a.Ext; x != nil {
		if p := x.Path; p != nil {
			ext += fmt.Sprintf(" path=%q", p.Replace)
			if p.Prefix {
				ext += fmt.Sprintf(" strip=%d", p.Strip)
			}
		}
		if x.Connect > 0 {
			ext += fmt.Sprintf(" connect=%s", x.Connect)
		}
		if x.Timeout > 0 {
			ext += fmt.Sprintf(" timeout=%s", x.Timeout)
		}
	}
	if ac := a.Access; !ac.Empty() {
		ext += fmt.Sprintf(" allow=%v deny=%v maxbody=%d rps=%d conns=%d", ac.Allow, ac.Deny, ac.MaxBody, ac.RPS, ac.Conns)
		if ac.RPM > 0 {
			ext += fmt.Sprintf(" rpm=%d", ac.RPM)
		}
		if len(ac.Exempt) > 0 {
			ext += fmt.Sprintf(" exempt=%v", ac.Exempt)
		}
		if ac.MatchCN != "" {
			ext += fmt.Sprintf(" matchcn=%q", ac.MatchCN)
		}
		if au := ac.Auth; au != nil {
			ext += fmt.Sprintf(" realm=%q users=%v", au.Realm, au.Users)
		}
		if x := ac.ExtAuth; x != nil {
			ext += fmt.Sprintf(" extauth=%q", x.Spec())
		}
	}
	if ac := a.Access; ac != nil && ac.NoLog {
		ext += " nolog"
	}
	if ac := a.Access; ac != nil && ac.Rewrite != nil {
		ext += fmt.Sprintf(" rewrite=%q", ac.Rewrite.Spec())
	}
	if rd := a.Redirect; rd != nil {
		if rd.StripSlash {
			ext = " strip-slash" + ext
		}
		return fmt.Sprintf("redirect scheme=%q host=%q port=%d code=%d", rd.Scheme, rd.Host, rd.Port, rd.Code) + ext
	}
	var parts []string
	for _, w := range a.Backends {
		parts = append(parts, fmt.Sprintf("%s*%d", w.Name, w.Weight))
	}
	for _, s := range a.Set {
		parts = append(parts, "set "+s.Name+"="+s.Value)
	}
	return strings.Join(parts, " ") + ext
}
