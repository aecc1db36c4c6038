package bgp

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/api"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
)

func TestConfigRefuses(t *testing.T) {
	good := func() Config {
		return Config{ASN: 65001, RouterID: netip.MustParseAddr("192.0.2.2"),
			Peers: []Peer{{Addr: netip.MustParseAddr("192.0.2.1"), ASN: 65000}}}
	}
	for _, tc := range []struct {
		name   string
		change func(c *Config)
		want   string
	}{
		{"no local AS", func(c *Config) { c.ASN = 0 }, "local AS number"},
		{"an IPv6 router ID", func(c *Config) { c.RouterID = netip.MustParseAddr("2001:db8::2") }, "router ID"},
		{"no peers", func(c *Config) { c.Peers = nil }, "no peers"},
		{"a peer without an AS", func(c *Config) { c.Peers[0].ASN = 0 }, "no AS number"},
		{"an unspecified peer", func(c *Config) { c.Peers[0].Addr = netip.IPv4Unspecified() }, "not a router's address"},
		{"a peer twice", func(c *Config) {
			c.Peers = append(c.Peers, Peer{Addr: netip.MustParseAddr("::ffff:192.0.2.1"), ASN: 65000})
		}, "twice"},
		{"a short hold time", func(c *Config) { c.HoldTime = 2 * time.Second }, "hold time"},
		{"a hold time in parts of seconds", func(c *Config) { c.HoldTime = 3500 * time.Millisecond }, "hold time"},
		{"a restart time too long", func(c *Config) { c.RestartTime = MaxRestartTime + time.Second }, "restart time"},
		{"a negative restart time", func(c *Config) { c.RestartTime = -time.Second }, "restart time"},
		{"a BFD interval too short", func(c *Config) { c.BFD = 10 * time.Millisecond }, "BFD"},
		{"IPv4 over IPv6 without an IPv6 peer", func(c *Config) { c.IPv4OverIPv6 = true }, "without an IPv6 peer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.change(&c)
			_, err := New(c)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want ErrConfig with %q", err, tc.want)
			}
		})
	}
	a, err := New(good())
	if err != nil {
		t.Fatal(err)
	}
	if a.cfg.HoldTime != DefaultHoldTime || a.cfg.RestartTime != 0 {
		t.Fatalf("defaults: hold %s restart %s", a.cfg.HoldTime, a.cfg.RestartTime)
	}
}

func TestRoutesDiff(t *testing.T) {
	a := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, x := range s {
			out = append(out, netip.MustParseAddr(x))
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		had           []netip.Addr
		want          announce.Want
		add, withdraw []netip.Addr
	}{
		{"first", nil, announce.Want{Addrs: a("192.0.2.9", "2001:db8::9"), Healthy: true}, a("192.0.2.9", "2001:db8::9"), nil},
		{"unhealthy withdraws all", a("192.0.2.9", "2001:db8::9"), announce.Want{Addrs: a("192.0.2.9"), Healthy: false}, nil, a("192.0.2.9", "2001:db8::9")},
		{"one gone one new", a("192.0.2.8", "192.0.2.9"), announce.Want{Addrs: a("192.0.2.10", "192.0.2.9"), Healthy: true}, a("192.0.2.10"), a("192.0.2.8")},
		{"mapped and twice are one", a("192.0.2.9"), announce.Want{Addrs: a("::ffff:192.0.2.9", "192.0.2.9"), Healthy: true}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			add, wd := diff(tc.had, routes(tc.want))
			if !slices.Equal(add, tc.add) || !slices.Equal(wd, tc.withdraw) {
				t.Fatalf("add %v withdraw %v, want %v %v", add, wd, tc.add, tc.withdraw)
			}
		})
	}
}

// TestPath: a host route of the address's family, next hop unspecified
// (each session's own address), the MED.
func TestPath(t *testing.T) {
	for _, s := range []string{"192.0.2.9", "2001:db8::9", "::ffff:192.0.2.9"} {
		p := path(netip.MustParseAddr(s), 100, false)
		want := netip.MustParseAddr(s).Unmap()
		if got := p.Nlri.String(); got != netip.PrefixFrom(want, want.BitLen()).String() {
			t.Errorf("%s: NLRI %s", s, got)
		}
		if (p.Family.Afi() == 1) != want.Is4() {
			t.Errorf("%s: family %v", s, p.Family)
		}
		if len(p.Attrs) != 3 {
			t.Errorf("%s: attributes %v", s, p.Attrs)
		}
	}
}

// TestFamilies: a session carries its own family, and IPv4 too over IPv6
// with IPv4OverIPv6 (never IPv6 over IPv4).
func TestFamilies(t *testing.T) {
	v4, v6 := Peer{Addr: netip.MustParseAddr("192.0.2.1")}, Peer{Addr: netip.MustParseAddr("2001:db8::1")}
	for _, tc := range []struct {
		peer    Peer
		v4over6 bool
		want    []api.Family_Afi
	}{
		{v4, false, []api.Family_Afi{api.Family_AFI_IP}},
		{v4, true, []api.Family_Afi{api.Family_AFI_IP}},
		{v6, false, []api.Family_Afi{api.Family_AFI_IP6}},
		{v6, true, []api.Family_Afi{api.Family_AFI_IP6, api.Family_AFI_IP}},
	} {
		c := Config{IPv4OverIPv6: tc.v4over6}
		if got := c.families(tc.peer); !slices.Equal(got, tc.want) {
			t.Errorf("%s, IPv4 over IPv6 %v: %v, want %v", tc.peer, tc.v4over6, got, tc.want)
		}
	}
}

// TestRefusalOf: which sessions going down are refusals, and how they
// are said.
func TestRefusalOf(t *testing.T) {
	peer := netip.MustParseAddr("192.0.2.1")
	id := netip.MustParseAddr("192.0.2.2")
	cases := []struct {
		reason  api.PeerState_DisconnectReason
		detail  string
		refused bool
		message string
	}{
		{api.PeerState_DISCONNECT_REASON_NOTIFICATION_RECEIVED, "notification-received open-message-error bad-peer-as", true,
			"router 192.0.2.1 refused the BGP session of 192.0.2.2 (notification received: notification-received open-message-error bad-peer-as): the addresses are not announced to it"},
		{api.PeerState_DISCONNECT_REASON_INVALID_MSG, "invalid-msg", true,
			"router 192.0.2.1 refused the BGP session of 192.0.2.2 (invalid msg): the addresses are not announced to it"},
		{api.PeerState_DISCONNECT_REASON_BAD_PEER_AS, "bad-peer-as", true, ""},
		{api.PeerState_DISCONNECT_REASON_NOTIFICATION_SENT, "notification-sent hold-timer-expired", true, ""},
		{api.PeerState_DISCONNECT_REASON_HOLD_TIMER_EXPIRED, "hold-timer-expired", false, ""},
		{api.PeerState_DISCONNECT_REASON_READ_FAILED, "read-failed", false, ""},
		{api.PeerState_DISCONNECT_REASON_IDLE_TIMER_EXPIRED, "idle-hold-timer-expired", false, ""},
		{api.PeerState_DISCONNECT_REASON_ADMIN_DOWN, "admin-down", false, ""},
	}
	for _, tc := range cases {
		r, ok := refusalOf(peer, tc.reason, tc.detail)
		if ok != tc.refused {
			t.Fatalf("%s: refused %v, want %v", tc.reason, ok, tc.refused)
		}
		if tc.message != "" && r.Message(id) != tc.message {
			t.Fatalf("%s: %q, want %q", tc.reason, r.Message(id), tc.message)
		}
	}
}
