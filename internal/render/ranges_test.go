package render

import (
	"bytes"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

func pfx(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, x := range s {
		out[i] = netip.MustParsePrefix(x)
	}
	return out
}

// restricted is sample() with source ranges on both frontends (one of them
// behind the PROXY protocol) and ClientIP affinity on one backend.
func restricted() model.Config {
	cfg := sample()
	cfg.Frontends[0].SourceRanges = pfx("192.0.2.0/24", "198.51.100.7/32")
	cfg.Frontends[1].SourceRanges = pfx("203.0.113.0/24", "2001:db8::/32")
	web := *cfg.Backends[0]
	web.Affinity = 3 * time.Hour
	cfg.Backends[0] = &web
	return cfg
}

const goldenACLDir = "/var/lib/hks/acl"

func TestGoldenRanges(t *testing.T) {
	cfg := restricted()
	layout, _ := plan.Assign(cfg, nil, true)
	withDir := opts
	withDir.ACLDir = goldenACLDir
	for name, got := range map[string][]byte{
		"sourceranges-inline.cfg":  Config(cfg, layout, opts),
		"sourceranges-aclfile.cfg": Config(cfg, layout, withDir),
	} {
		t.Run(name, func(t *testing.T) {
			golden.Assert(t, name, got)
			// HAProxy reads the ACL files: write them where the check
			// finds them.
			dir := t.TempDir()
			for _, f := range cfg.Frontends {
				for _, v6 := range []bool{false, true} {
					if err := os.WriteFile(ACLFile(dir, f.Name, v6), ACLFileContent(f, v6), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			golden.HAProxyAccepts(t, bytes.ReplaceAll(got, []byte(goldenACLDir), []byte(dir)))
		})
	}
	golden.Assert(t, "fe_default_web_80_ipv4.acl", ACLFileContent(cfg.Frontends[0], false))
	golden.Assert(t, "fe_prod_db_5432_ipv6.acl", ACLFileContent(cfg.Frontends[1], true))
	if b := string(ACLFileContent(cfg.Frontends[0], true)); b != NoClient6+"\n" {
		t.Errorf("the IPv6 file of a frontend with IPv4 ranges only holds %q, want %s alone", b, NoClient6)
	}
	if b := string(ACLFileContent(model.Frontend{SourceRanges: pfx("2001:db8::/32")}, false)); b != NoClient4+"\n" {
		t.Errorf("the IPv4 file of a frontend with IPv6 ranges only holds %q, want %s alone", b, NoClient4)
	}
}

// Each client is checked against the ranges of its own family: the rule
// names a family without ranges only to refuse its clients (inline), or
// names its empty file (ACL files, which may gain ranges at runtime).
func TestSourceRulePerFamily(t *testing.T) {
	withDir := opts
	withDir.ACLDir = goldenACLDir
	for _, tc := range []struct {
		name   string
		ranges []netip.Prefix
		proxy  bool
		o      Options
		want   string
	}{
		{"both families inline", pfx("10.0.0.0/8", "::/0"), false, opts,
			"tcp-request connection reject unless { src ::ffff:0:0/96 } { src 10.0.0.0/8 } || !{ src ::ffff:0:0/96 } { src ::/0 }"},
		{"ipv4 only inline: no ipv6 client", pfx("192.0.2.0/24", "198.51.100.7/32"), false, opts,
			"tcp-request connection reject unless { src ::ffff:0:0/96 } { src 192.0.2.0/24 198.51.100.7/32 }"},
		{"ipv6 only inline: no ipv4 client", pfx("2001:db8::/32"), true, opts,
			"tcp-request session reject unless !{ src ::ffff:0:0/96 } { src 2001:db8::/32 }"},
		{"acl files name both families", pfx("192.0.2.0/24"), false, withDir,
			"tcp-request connection reject unless { src ::ffff:0:0/96 } { src -f /var/lib/hks/acl/fe_x_ipv4.acl } || " +
				"!{ src ::ffff:0:0/96 } { src -f /var/lib/hks/acl/fe_x_ipv6.acl }"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := model.Frontend{Name: "fe_x", SourceRanges: tc.ranges, AcceptProxy: tc.proxy}
			if got := sourceRule(f, tc.o); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if got := SourceCondition("", ""); got != "FALSE" {
		t.Errorf("no ranges of either family: %q, want FALSE", got)
	}
}

func TestRangesStructure(t *testing.T) {
	withDir := opts
	withDir.ACLDir = goldenACLDir
	cfg := restricted()
	layout, _ := plan.Assign(cfg, nil, true)
	other := restricted()
	other.Frontends[0].SourceRanges = pfx("198.18.0.0/15")
	open := restricted()
	open.Frontends[0].SourceRanges = nil
	family := restricted()
	family.Frontends[0].SourceRanges = pfx("2001:db8:1::/48")
	for _, tc := range []struct {
		name  string
		o     Options
		cfg   model.Config
		equal bool
	}{
		{"acl file: other ranges are no structure", withDir, other, true},
		{"acl file: no ranges at all is structure", withDir, open, false},
		{"acl file: ranges of the other family only are no structure", withDir, family, true},
		{"inline: other ranges are structure", opts, other, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			same := StructureHash(cfg, layout, tc.o) == StructureHash(tc.cfg, layout, tc.o)
			if same != tc.equal {
				t.Errorf("same hash = %v, want %v", same, tc.equal)
			}
		})
	}
	if c := string(Config(other, layout, withDir)); strings.Contains(c, "198.18.") {
		t.Errorf("with an ACL directory the ranges are in the config:\n%s", c)
	}
}

// Services on their own addresses from the pools, bound with transparent (IP_FREEBIND).
func TestGoldenPooled(t *testing.T) {
	cfg := sample()
	cfg.Frontends[0].Binds = []model.Bind{{Addr: ap("198.18.0.10"), Port: 443, Transparent: true}, {Addr: ap("2001:db8::10"), Port: 443, Transparent: true}}
	cfg.Frontends[1].Binds = []model.Bind{{Addr: ap("198.18.0.11"), Port: 5432, Transparent: true}}
	layout, _ := plan.Assign(cfg, nil, true)
	got := Config(cfg, layout, opts)
	golden.Assert(t, "pooled.cfg", got)
	golden.HAProxyAccepts(t, got)
}
