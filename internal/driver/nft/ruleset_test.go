package nft

import (
	"net/netip"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func TestKeepIndices(t *testing.T) {
	a, b, c, d := ap("198.51.100.1:1"), ap("198.51.100.2:1"), ap("198.51.100.3:1"), ap("198.51.100.4:1")
	tests := []struct {
		name      string
		old, want []netip.AddrPort
		out       []netip.AddrPort
	}{
		{"first time: sorted order", nil, []netip.AddrPort{a, b, c}, []netip.AddrPort{a, b, c}},
		{"one replaced: the others keep their index", []netip.AddrPort{a, b, c}, []netip.AddrPort{a, c, d}, []netip.AddrPort{a, d, c}},
		{"one removed from the middle: the last moves into the gap", []netip.AddrPort{a, b, c}, []netip.AddrPort{a, c}, []netip.AddrPort{a, c}},
		{"one added: takes the new index", []netip.AddrPort{c, a}, []netip.AddrPort{a, b, c}, []netip.AddrPort{c, a, b}},
		{"all gone", []netip.AddrPort{a}, nil, []netip.AddrPort{}},
		{"weighted: a server's entries keep their indices", []netip.AddrPort{a, b, a, b}, []netip.AddrPort{a, a, a, b}, []netip.AddrPort{a, b, a, a}},
		{"weighted: fewer entries free the last ones", []netip.AddrPort{a, b, a, c}, []netip.AddrPort{a, b, c}, []netip.AddrPort{a, b, c}},
		{"weighted: first time", nil, []netip.AddrPort{a, a, a, a, b}, []netip.AddrPort{a, a, a, a, b}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keepIndices(tt.old, tt.want); !slices.Equal(got, tt.out) {
				t.Errorf("keepIndices = %v, want %v", got, tt.out)
			}
		})
	}
}

// udpModel is the golden model: the seed's WireGuard on every local
// address (roundrobin, one node draining, one down by its probe), and a
// DNS port on two addresses with source hashing over both families and
// ClientIP affinity.
func udpModel() []model.UDPService {
	a := netip.MustParseAddr
	return []model.UDPService{
		{Name: "udp_kube-system_dns_53", Service: "kube-system/dns", Balance: model.BalanceSource, Affinity: 3 * time.Hour,
			SourceRanges: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/25"), netip.MustParsePrefix("192.0.2.128/25"),
				netip.MustParsePrefix("198.51.100.7/32"), netip.MustParsePrefix("2001:db8::/32")},
			Binds:   []model.Bind{{Addr: a("192.0.2.1"), Port: 53}, {Addr: a("2001:db8::1"), Port: 53}},
			Servers: []model.Server{{Addr: a("10.244.1.5"), Port: 5353}, {Addr: a("2001:db8:1::5"), Port: 5353}}},
		{Name: "udp_vpn_wireguard_51820", Service: "vpn/wireguard", Balance: model.BalanceRoundRobin, Probe: true,
			Binds: []model.Bind{{Port: 51820}},
			Servers: []model.Server{{Addr: a("192.168.1.11"), Port: 31820}, {Addr: a("192.168.1.12"), Port: 31820},
				{Addr: a("192.168.1.13"), Port: 31820, Drain: true}, {Addr: a("192.168.1.14"), Port: 31820}}},
	}
}

func down(a netip.Addr) bool { return a == netip.MustParseAddr("192.168.1.14") }

func TestRenderGolden(t *testing.T) {
	out := Render(Plan(udpModel(), nil, down))
	golden.Assert(t, "ruleset.nft", out)
	netlab.NFTAccepts(t, out)
}

// What the driver programs through netlink is what Render writes: both
// listed back by nft, after `nft -f` of the rendered text in one
// namespace and the driver's batches in another.
func TestRenderMatchesKernel(t *testing.T) {
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("no nft command")
	}
	text := netlab.New(t, 0)
	cmd := exec.Command("ip", "netns", "exec", text.LB, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(string(Render(Plan(udpModel(), nil, down))))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft -f: %v: %s", err, out)
	}
	kernel := netlab.New(t, 0)
	d := newDriver(t, kernel, Health{Kind: "none"})
	u := udpModel()
	u[1].Servers = u[1].Servers[:3] // what the probe took out, without a prober
	apply(t, d, u...)
	if got, want := normalize(listTable(t, kernel)), normalize(listTable(t, text)); got != want {
		t.Errorf("the driver's table:\n%s\ndiffers from the rendered one:\n%s", got, want)
	}
}

// normalize makes the listing of the two tables comparable: nft keeps
// the `typeof` of a map written in text, the driver declares its type
// (the same 32 bits).
var (
	typeofV4 = regexp.MustCompile(`typeof numgen inc mod 1 : ip daddr \. udp dport`)
	typeofV6 = regexp.MustCompile(`typeof numgen inc mod 1 : ip6 daddr \. udp dport`)
	markKey  = regexp.MustCompile(`0x0*([0-9a-f]+) :`)
)

// The order of the chains is their order of creation: blocks are sorted.
func normalize(s string) string {
	s = typeofV4.ReplaceAllString(s, "type mark : ipv4_addr . inet_service")
	s = typeofV6.ReplaceAllString(s, "type mark : ipv6_addr . inet_service")
	s = markKey.ReplaceAllString(s, "$1 :")
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimPrefix(s, "table inet "+Table+" {"), "}")
	blocks := strings.Split(s, "\n\n")
	for i := range blocks {
		blocks[i] = strings.TrimSpace(blocks[i])
	}
	slices.Sort(blocks)
	return strings.Join(blocks, "\n\n")
}

func TestPlan(t *testing.T) {
	a := netip.MustParseAddr
	srv := func(addr string, drain, maint bool) model.Server {
		return model.Server{Addr: a(addr), Port: 31820, Drain: drain, Maint: maint}
	}
	u := model.UDPService{Name: "udp_a_b_1", Balance: model.BalanceSource, Probe: true,
		Binds: []model.Bind{{Addr: a("2001:db8::1"), Port: 1}, {Addr: a("192.0.2.1"), Port: 1}, {Addr: a("192.0.2.1"), Port: 1}},
		Servers: []model.Server{srv("198.51.100.1", false, false), srv("198.51.100.2", true, false),
			srv("198.51.100.3", false, true), srv("198.51.100.4", false, false), srv("2001:db8::5", false, false)}}
	downOn4 := func(x netip.Addr) bool { return x == a("198.51.100.4") }
	tests := []struct {
		name string
		in   model.UDPService
		down func(netip.Addr) bool
		want Service
	}{
		{"addresses sorted and unique; drain kept apart, maint left out; families apart; probe filters",
			u, downOn4,
			Service{Name: "udp_a_b_1", Port: 1, Balance: model.BalanceSource,
				Addrs: []netip.Addr{a("192.0.2.1"), a("2001:db8::1")},
				V4:    []netip.AddrPort{ap("198.51.100.1:31820")}, V6: []netip.AddrPort{ap("[2001:db8::5]:31820")},
				Drain: []netip.AddrPort{ap("198.51.100.2:31820")}}},
		{"pods are not probed; a zero address means any local address",
			func() model.UDPService {
				v := u
				v.Probe, v.Binds = false, []model.Bind{{Port: 1}}
				return v
			}(), downOn4,
			Service{Name: "udp_a_b_1", Port: 1, Any: true, Balance: model.BalanceSource,
				V4: []netip.AddrPort{ap("198.51.100.1:31820"), ap("198.51.100.4:31820")}, V6: []netip.AddrPort{ap("[2001:db8::5]:31820")},
				Drain: []netip.AddrPort{ap("198.51.100.2:31820")}}},
	}
	weighted := u
	weighted.Probe, weighted.Weights = false, []uint16{4, 1, 1, 2, 0}
	tests = append(tests, struct {
		name string
		in   model.UDPService
		down func(netip.Addr) bool
		want Service
	}{"weights: as many map entries as the weight; weight 0 takes no new flow",
		weighted, nil,
		Service{Name: "udp_a_b_1", Port: 1, Balance: model.BalanceSource,
			Addrs: []netip.Addr{a("192.0.2.1"), a("2001:db8::1")},
			V4: []netip.AddrPort{ap("198.51.100.1:31820"), ap("198.51.100.1:31820"), ap("198.51.100.1:31820"), ap("198.51.100.1:31820"),
				ap("198.51.100.4:31820"), ap("198.51.100.4:31820")},
			V6:    []netip.AddrPort{},
			Drain: []netip.AddrPort{ap("198.51.100.2:31820")}}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan([]model.UDPService{tt.in}, nil, tt.down)
			if len(got) != 1 || !reflect.DeepEqual(got[0], tt.want) {
				t.Errorf("Plan = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
