package keepalived

import (
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

var (
	vip4  = netip.MustParseAddr("198.51.100.10")
	vip4b = netip.MustParseAddr("198.51.100.11")
	vip6  = netip.MustParseAddr("2001:db8:ff::10")
)

func base() Config {
	return Config{Name: "lb1", Interface: "eth0", VRID: 51, HealthFile: "/run/haproxy-k8s-sync/keepalived.health"}
}

// TestRender: golden files of the shapes a group takes, each accepted
// by the real keepalived's config test.
func TestRender(t *testing.T) {
	for _, tc := range []struct {
		file  string
		cfg   func() Config
		addrs []netip.Addr
	}{
		{"ipv4.conf", base, []netip.Addr{vip4b, vip4, netip.MustParseAddr("::ffff:198.51.100.10")}},
		{"dual.conf", func() Config { c := base(); c.Advert = 100 * time.Millisecond; c.Priority = 150; return c }, []netip.Addr{vip4, vip6}},
		{"unicast.conf", func() Config {
			c := base()
			c.Sources = []netip.Addr{netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("2001:db8::2")}
			c.Peers = []netip.Addr{netip.MustParseAddr("192.0.2.3"), netip.MustParseAddr("192.0.2.4"), netip.MustParseAddr("2001:db8::3")}
			return c
		}, []netip.Addr{vip4, vip6}},
		{"none.conf", base, nil},
		{"odd-name.conf", func() Config { c := base(); c.Name = "LB 1 }\n#"; return c }, []netip.Addr{vip4}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := Render(tc.cfg(), tc.addrs)
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, tc.file, b)
			accepts(t, b)
		})
	}
}

func TestRenderRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *Config)
		want   string
	}{
		{"an interface with a space", func(c *Config) { c.Interface = "eth0 }" }, "interface"},
		{"an interface too long", func(c *Config) { c.Interface = strings.Repeat("e", 16) }, "interface"},
		{"no VRID", func(c *Config) { c.VRID = 0 }, "virtual router ID"},
		{"a VRID leaving none for IPv6", func(c *Config) { c.VRID = 255 }, "virtual router ID"},
		{"a priority of 255 (the address owner's)", func(c *Config) { c.Priority = 255 }, "priority"},
		{"an advert in milliseconds", func(c *Config) { c.Advert = 105 * time.Millisecond }, "advert"},
		{"a relative health file", func(c *Config) { c.HealthFile = "health" }, "health file"},
		{"a health file with a quote", func(c *Config) { c.HealthFile = "/run/a\"b" }, "health file"},
		{"peers without a source", func(c *Config) { c.Peers = []netip.Addr{vip4} }, "source"},
		{"an IPv6 peer with an IPv4 source", func(c *Config) {
			c.Sources, c.Peers = []netip.Addr{netip.MustParseAddr("192.0.2.2")}, []netip.Addr{netip.MustParseAddr("2001:db8::3")}
		}, "source"},
		{"two IPv4 sources", func(c *Config) { c.Sources = []netip.Addr{vip4, vip4b} }, "one per family"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.change(&c)
			if _, err := Render(c, []netip.Addr{vip4}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want ErrConfig about %q", err, tc.want)
			}
		})
	}
}

// accepts fails t unless `keepalived -t` accepts conf, checked in a
// network namespace with eth0 (skipped without keepalived or root).
func accepts(t *testing.T, conf []byte) {
	t.Helper()
	bin, err := exec.LookPath("keepalived")
	if err != nil {
		if bin = "/usr/sbin/keepalived"; !exists(bin) {
			t.Skip("no keepalived (apt-get install keepalived; make deps)")
		}
	}
	seg := netlab.NewSegment(t, "lb1")
	f := filepath.Join(t.TempDir(), "keepalived.conf")
	if err := os.WriteFile(f, conf, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ip", "netns", "exec", seg.Hosts[0].NS, bin, "-t", "-l", "-f", f).CombinedOutput()
	if err != nil {
		t.Fatalf("keepalived -t: %v\n%s\n%s", err, out, conf)
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
