package cli

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce/bgp"
)

func TestAnnounceBGPSetupRefuses(t *testing.T) {
	dir := t.TempDir()
	long, empty := filepath.Join(dir, "long"), filepath.Join(dir, "empty")
	if err := os.WriteFile(long, []byte(strings.Repeat("x", 81)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := announceFlags{mode: announceBGP, bgp: bgpFlags{asn: 65001, routerID: "192.0.2.2", peers: []string{"192.0.2.1@65000"},
		holdTime: bgp.DefaultHoldTime, restartTime: bgp.DefaultRestartTime}}
	cases := []struct {
		name   string
		change func(a *announceFlags)
		want   string
		usage  bool
	}{
		{"no AS number", func(a *announceFlags) { a.bgp.asn = 0 }, "needs --announce-bgp-asn", true},
		{"no peers", func(a *announceFlags) { a.bgp.peers = nil }, "needs --announce-bgp-asn and --announce-bgp-peers", true},
		{"a peer that is a name", func(a *announceFlags) { a.bgp.peers = []string{"router1@65000"} }, "want IP[:PORT][@ASN]", true},
		{"a peer without an AS", func(a *announceFlags) { a.bgp.peers = []string{"192.0.2.1"} }, "--announce-bgp-peer-asn", true},
		{"a peer's AS not a number", func(a *announceFlags) { a.bgp.peers = []string{"192.0.2.1@AS65000"} }, "not a number", true},
		{"a peer on port 0", func(a *announceFlags) { a.bgp.peers = []string{"192.0.2.1:0@65000"} }, "port 0", true},
		{"a peer twice", func(a *announceFlags) { a.bgp.peers = []string{"192.0.2.1@65000", "192.0.2.1:179@65000"} }, "twice", true},
		{"an IPv6 router ID", func(a *announceFlags) { a.bgp.routerID = "2001:db8::2" }, "want an IPv4 address", true},
		{"no router ID, no IPv4 peer", func(a *announceFlags) { a.bgp.routerID = ""; a.bgp.peers = []string{"[2001:db8::1]@65000"} }, "no IPv4 peer", true},
		{"a short hold time", func(a *announceFlags) { a.bgp.holdTime = time.Second }, "hold time", true},
		{"a fast BFD", func(a *announceFlags) { a.bgp.bfd = time.Millisecond }, "BFD interval", true},
		{"IPv4 over IPv6 without an IPv6 peer", func(a *announceFlags) { a.bgp.v4over6 = true }, "without an IPv6 peer", true},
		{"no password file", func(a *announceFlags) { a.bgp.passwordFile = filepath.Join(dir, "none") }, "--announce-bgp-password-file", false},
		{"a password too long", func(a *announceFlags) { a.bgp.passwordFile = long }, "want 1 to 80", true},
		{"an empty password", func(a *announceFlags) { a.bgp.passwordFile = empty }, "want 1 to 80", true},
		{"a flag of l2", func(a *announceFlags) { a.iface = "eth0" }, "flags of --announce=l2", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := base
			a.bgp.peers = append([]string(nil), base.bgp.peers...)
			tc.change(&a)
			d, err := a.setup(context.Background(), nil, nil, slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an error with %q", err, tc.want)
			}
			if _, ok := err.(usageError); ok != tc.usage {
				t.Fatalf("%v: a usage error %v, want %v", err, ok, tc.usage)
			}
			if d != nil {
				t.Fatal("a driver with the error")
			}
		})
	}
}

func TestParseBGPPeer(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1":                "192.0.2.1:179 AS 64999",
		"192.0.2.1@65000":          "192.0.2.1:179 AS 65000",
		"192.0.2.1:1179@65000":     "192.0.2.1:1179 AS 65000",
		"2001:db8::1@65000":        "[2001:db8::1]:179 AS 65000",
		"[2001:db8::1]:1179@65000": "[2001:db8::1]:1179 AS 65000",
		"[2001:db8::1]":            "[2001:db8::1]:179 AS 64999",
	} {
		p, err := parseBGPPeer(in, 64999)
		if got := p.String() + " AS " + strconv.FormatUint(uint64(p.ASN), 10); err != nil || got != want {
			t.Errorf("%s: %s %v, want %s", in, got, err, want)
		}
	}
}
