package render

import (
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// TestClientCertHeaders: an action's ClientCert is the access map's
// "aK.t" entry, read by fixed rules of a terminating HTTP frontend with
// access rules (none on a frontend without TLS); turning it on, to the
// certificate or off keeps the structure (no reload); HAProxy loads it.
func TestClientCertHeaders(t *testing.T) {
	cfg := terminating(t) // tls_test.go
	f := &cfg.Frontends[0]
	table := func(cc uint8) *model.HTTP {
		return model.Shaped(&model.HTTP{Port: 8443,
			Actions: []model.HTTPAction{{Access: &model.HTTPAccess{}},
				{Backends: []model.WeightedBackend{{Name: "gw_default_web", Weight: 1}}, Access: &model.HTTPAccess{ClientCert: cc}}},
			Hosts: []model.HTTPHost{{Name: "a.example", Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 1}}}}})
	}
	o := opts
	o.CertDir, o.ACLDir = goldenCertDir, goldenACLDir
	f.HTTP = table(0)
	layout, _ := plan.Assign(cfg, nil, true)
	plain := StructureHash(cfg, layout, o)
	for _, tc := range []struct {
		cc    uint8
		entry string // the action's .t entry; "" none
	}{{0, ""}, {model.ClientCertInfo, "1"}, {model.ClientCertPass, "2"},
		{model.ClientCertHAInfo, "3"}, {model.ClientCertHAPass, "4"}, {7, ""}} {
		f.HTTP = table(tc.cc)
		got := ""
		for _, e := range HTTPMaps(f.HTTP)[HTTPAccessMap] {
			if strings.HasSuffix(e.Key, ".t") {
				got = e.Value
			}
		}
		if got != tc.entry {
			t.Errorf("ClientCert %d: entry %q, want %q", tc.cc, got, tc.entry)
		}
		if StructureHash(cfg, layout, o) != plain {
			t.Errorf("ClientCert %d: the structure changed: a reload", tc.cc)
		}
	}
	text := string(Config(cfg, layout, o))
	for _, rule := range []string{
		"http-request set-var(txn.tc) var(txn.act),concat(.t),map_str(" + HTTPMapFile(o.ACLDir, f.Name, HTTPAccessMap) + ")",
		"http-request del-header ssl-client-cert if { var(txn.tc) -m str 1 2 }",
		"http-request del-header X-SSL-Client-SHA1 if { var(txn.tc) -m str 3 4 }",
		"http-request set-header X-SSL-Client-SHA1 %{+Q}[ssl_c_sha1,hex] if { var(txn.tc) -m str 3 4 }",
		"http-request set-header X-SSL-Client-Cert %{+Q}[ssl_c_der,base64] if { var(txn.tc) -m str 4 }",
		"http-request set-header ssl-client-subject-dn %[ssl_c_s_dn(,0,rfc2253)]",
		"%[ssl_c_der,base64,url_enc]",
	} {
		if !strings.Contains(text, rule) {
			t.Errorf("no rule %q", rule)
		}
	}
	// The rules come after the action's own header changes: an
	// annotation cannot set these names.
	if i, j := strings.Index(text, "set-var(txn.tc)"), strings.Index(text, "use_backend %[var(txn.be)]"); i < 0 || j < i {
		t.Error("the client certificate rules are not right before the backend")
	}
	plainHTTP := *f
	plainHTTP.TLS = nil
	c := cfg
	c.Frontends = []model.Frontend{plainHTTP}
	if strings.Contains(string(Config(c, layout, o)), "txn.tc") {
		t.Error("a frontend without TLS reads the client certificate")
	}

	// HAProxy loads it, with the files the driver writes.
	dir := t.TempDir()
	o.CertDir, o.ACLDir = dir, dir
	writeTLSFiles(t, cfg, o, map[string][]byte{ClientAuthMapFile(dir): nil}) // clientauth_test.go
	writeHTTPMapFiles(t, dir, *f)
	if !slices.Contains(ClientCertHeaders, "ssl-client-cert") {
		t.Fatal("ClientCertHeaders lost ssl-client-cert")
	}
	golden.HAProxyAccepts(t, Config(cfg, layout, o))
}
