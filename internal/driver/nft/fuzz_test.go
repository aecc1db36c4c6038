package nft

import (
	"bytes"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// nftLine is what a line of the rendered ruleset may hold: names,
// numbers, addresses and nft's punctuation; never a quote, a newline of
// its own or a second statement.
var (
	nftLine = regexp.MustCompile(`^[\t]*[a-zA-Z0-9_ .:,/!=@{}()#-]*$`)
	// hookLine: the one shape of line with semicolons.
	hookLine = regexp.MustCompile(`^\t+type [a-z]+ hook [a-z]+ priority [a-z0-9+-]+; policy [a-z]+;$`)
)

// FuzzRender renders the UDP ports of one Service built from fuzzed
// addresses (servers, listen address, source range; an IPv6 zone is text
// a node's status could carry), ports, balance, weights and affinity:
// the ruleset must be the same on every render, its braces balanced and
// every line of the allowed shape, and each server must appear in it.
func FuzzRender(f *testing.F) {
	f.Add([]byte{192, 0, 2, 1}, "", uint16(53), uint16(5353), []byte{192, 0, 2, 10}, []byte{198, 51, 100, 0}, uint8(24), uint16(1), uint16(0), false)
	f.Add(netip.MustParseAddr("2001:db8::5").AsSlice(), "eth0", uint16(51820), uint16(1), []byte{}, []byte{}, uint8(0), uint16(3), uint16(10800), true)
	f.Add(netip.MustParseAddr("fe80::1").AsSlice(), "x y;drop", uint16(1), uint16(65535), []byte{0, 0, 0, 0}, []byte{10, 0, 0, 0}, uint8(33), uint16(0), uint16(1), false)
	f.Fuzz(func(t *testing.T, server []byte, zone string, port, serverPort uint16, listen, src []byte, bits uint8, weight, affinity uint16, source bool) {
		srv, ok := netip.AddrFromSlice(server)
		if !ok || port == 0 || serverPort == 0 {
			return
		}
		if srv.Is6() {
			srv = srv.WithZone(zone)
		}
		u := model.UDPService{Name: "udp_default_web_53", Service: "default/web", Balance: model.BalanceRoundRobin,
			Servers: []model.Server{{Addr: srv, Port: serverPort}}, Weights: []uint16{weight},
			Affinity: time.Duration(affinity) * time.Second}
		if source {
			u.Balance = model.BalanceSource
		}
		bind := model.Bind{Port: port}
		if a, ok := netip.AddrFromSlice(listen); ok {
			bind.Addr = a
		}
		u.Binds = []model.Bind{bind}
		if a, ok := netip.AddrFromSlice(src); ok {
			if p, err := a.Prefix(int(bits)); err == nil {
				u.SourceRanges = []netip.Prefix{p}
			}
		}
		services := Plan([]model.UDPService{u}, nil, nil)
		out := Render(services)
		if again := Render(Plan([]model.UDPService{u}, nil, nil)); !bytes.Equal(out, again) {
			t.Fatalf("two renders differ:\n%s\n%s", out, again)
		}
		if strings.Count(string(out), "{") != strings.Count(string(out), "}") {
			t.Fatalf("unbalanced braces:\n%s", out)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
			if !nftLine.MatchString(line) && !hookLine.MatchString(line) {
				t.Fatalf("line %q outside the ruleset's grammar (server %s)", line, srv)
			}
		}
		// A zoned address is no server (desired never makes one; Plan
		// leaves it out).
		if weight > 0 && srv.Zone() == "" && !bytes.Contains(out, []byte(srv.String())) {
			t.Fatalf("server %s missing:\n%s", srv, out)
		}
	})
}
