package render

import (
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// TestHostClientAuthEntries: a certificate with its own Client verifies
// on its own line (required or optional), one whose CA cannot be written
// is left out and its hosts closed, as are TLS.Closed; the map holds one
// entry per exact host; clients turning on, off or to another CA keep
// the structure (no reload); HAProxy loads it.
func TestHostClientAuthEntries(t *testing.T) {
	ca, other := testcert.CA(t, "clients").PEM(), testcert.CA(t, "clients").PEM()
	cfg := terminating(t) // tls_test.go
	f := &cfg.Frontends[0]
	f.HTTP = model.Shaped(&model.HTTP{Port: 8443})
	o := opts
	o.CertDir, o.ACLDir = goldenCertDir, goldenACLDir
	layout, _ := plan.Assign(cfg, nil, true)
	plain := StructureHash(cfg, layout, o)
	for _, tc := range []struct {
		name    string
		a, b    *model.ClientAuth
		closed  []string
		line    string // cert_default_a's options
		entries []string
	}{
		{name: "none"},
		{name: "required", a: &model.ClientAuth{CA: "cca_ok", CAPEM: ca},
			line:    "verify required no-ca-names ca-file " + CAFile(o.CertDir, "cca_ok"),
			entries: []string{f.Name + "/a.example required/" + caDigest(ca)}},
		{name: "optional", a: &model.ClientAuth{CA: "cca_ok", CAPEM: ca, Optional: true},
			line:    "verify optional no-ca-names ca-file " + CAFile(o.CertDir, "cca_ok"),
			entries: []string{f.Name + "/a.example verify/" + caDigest(ca)}},
		{name: "another bundle under the name is another value", a: &model.ClientAuth{CA: "cca_ok", CAPEM: other},
			line:    "verify required no-ca-names ca-file " + CAFile(o.CertDir, "cca_ok"),
			entries: []string{f.Name + "/a.example required/" + caDigest(other)}},
		{name: "a CA without a bundle closes", a: &model.ClientAuth{CA: "cca_ok", CAPEM: ca}, b: &model.ClientAuth{CA: "cca_none"},
			line:    "verify required no-ca-names ca-file " + CAFile(o.CertDir, "cca_ok"),
			entries: []string{f.Name + "/a.example required/" + caDigest(ca), f.Name + "/b.example closed"}},
		{name: "closed hosts", closed: []string{"gone.example", "*.wild.example"},
			entries: []string{f.Name + "/gone.example closed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tls := *f.TLS
			tls.Certificates = slices.Clone(tls.Certificates)
			tls.Certificates[0].Client, tls.Certificates[1].Client, tls.Closed = tc.a, tc.b, tc.closed
			fe := *f
			fe.TLS = &tls
			lines := map[string]string{}
			for _, e := range CrtListEntries(o, fe) {
				lines[e.File] = e.Opts
			}
			if got := lines[CertFile(o.CertDir, "cert_default_a")]; got != tc.line {
				t.Errorf("line of a: %q, want %q", got, tc.line)
			}
			if _, in := lines[CertFile(o.CertDir, "cert_default_b")]; in != (tc.b == nil) {
				t.Errorf("line of b listed %v, want %v", in, tc.b == nil)
			}
			var got []string
			for _, e := range HostClientAuthEntries(o, fe) {
				got = append(got, e.Key+" "+e.Value)
			}
			if !slices.Equal(got, tc.entries) {
				t.Errorf("entries %q, want %q", got, tc.entries)
			}
			c := cfg
			c.Frontends = slices.Clone(cfg.Frontends)
			c.Frontends[0] = fe
			if StructureHash(c, layout, o) != plain {
				t.Error("the structure changed: a reload")
			}
		})
	}

	got := string(Config(cfg, layout, o))
	cam, im := ClientAuthMapFile(o.ACLDir), IssuerMapFile(o.ACLDir)
	for _, rule := range []string{"set-var-fmt(txn.ck)", "set-var(txn.cv) var(txn.ck),map_str(" + cam + ")",
		"deny status 403 if { var(txn.cv) -m str closed }",
		"return status 421 if { var(txn.cv) -m beg verify/ required/ } !{ var(txn.sni),strcmp(txn.host) eq 0 }",
		"deny status 400 if { var(txn.cv) -m beg required/ } !{ ssl_c_used }",
		"set-map(" + im + ") %[var(txn.ci)] 1 if { var(txn.ci) -m found } !{ ssl_fc_is_resumed } { ssl_c_verify 0 } !{ var(txn.ci),map_str(" + im + ") -m found }",
		"return status 421 if { var(txn.ci) -m found } { ssl_fc_is_resumed } !{ var(txn.ci),map_str(" + im + ") -m found }"} {
		if !strings.Contains(got, rule) {
			t.Errorf("no rule %q", rule)
		}
	}

	// HAProxy loads it, with the files the driver writes.
	dir := t.TempDir()
	o.CertDir, o.ACLDir = dir, dir
	tls := *f.TLS
	tls.Certificates = slices.Clone(tls.Certificates)
	tls.Certificates[0].Client = &model.ClientAuth{CA: "cca_ok", CAPEM: ca}
	f.TLS = &tls
	writeTLSFiles(t, cfg, o, map[string][]byte{CAFile(dir, "cca_ok"): ca, ClientAuthMapFile(dir): MapContent(HostClientAuthEntries(o, *f))}) // clientauth_test.go
	writeHTTPMapFiles(t, dir, *f)
	golden.HAProxyAccepts(t, Config(cfg, layout, o))
}
