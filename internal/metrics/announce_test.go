package metrics

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestAnnounce: the announcer's gauges (an address let go loses its
// series), labelled with its name, lint
// clean; a nil recorder does nothing.
func TestAnnounce(t *testing.T) {
	r := New(Options{Version: "test"})
	a := r.Announce("bgp")
	a.Addresses(3)
	a.Sessions(2)
	a.Held([]netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("192.0.2.11")})
	a.Held([]netip.Addr{netip.MustParseAddr("192.0.2.11"), netip.MustParseAddr("2001:db8::10")}) // .10 let go
	want := `# HELP haproxy_k8s_sync_announced_address 1 for each address this host announces now (layer 2: owns; BGP: advertises to an established router), by address; summed over the hosts, who announces each.
# TYPE haproxy_k8s_sync_announced_address gauge
haproxy_k8s_sync_announced_address{address="192.0.2.11",announcer="bgp"} 1
haproxy_k8s_sync_announced_address{address="2001:db8::10",announcer="bgp"} 1
# HELP haproxy_k8s_sync_announce_sessions_up Sessions with the routers that are up (BGP: established).
# TYPE haproxy_k8s_sync_announce_sessions_up gauge
haproxy_k8s_sync_announce_sessions_up{announcer="bgp"} 2
# HELP haproxy_k8s_sync_announced_addresses Addresses this host announces now (BGP: routes advertised to a router whose session is established; 0 while its health gate fails).
# TYPE haproxy_k8s_sync_announced_addresses gauge
haproxy_k8s_sync_announced_addresses{announcer="bgp"} 3
`
	if err := testutil.GatherAndCompare(r.Gatherer(), strings.NewReader(want), "haproxy_k8s_sync_announced_address", "haproxy_k8s_sync_announce_sessions_up", "haproxy_k8s_sync_announced_addresses"); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.GatherAndLint(r.Gatherer(), "haproxy_k8s_sync_announced_address", "haproxy_k8s_sync_announce_sessions_up", "haproxy_k8s_sync_announced_addresses"); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
	var none *Announce
	none.Addresses(1)
	none.Sessions(1)
	none.Held(nil)
	none.Refused("192.0.2.1", "bad peer as")
}

// TestAnnounceRefusals: each refusal counted by router and reason.
func TestAnnounceRefusals(t *testing.T) {
	r := New(Options{Version: "test"})
	a := r.Announce("bgp")
	a.Refused("192.0.2.1", "notification received")
	a.Refused("192.0.2.1", "notification received")
	a.Refused("2001:db8::1", "bad peer as")
	want := `# HELP haproxy_k8s_sync_announce_refusals_total Sessions a router refused (BGP: a NOTIFICATION received or sent, a peer AS other than configured, a malformed message), by router and reason.
# TYPE haproxy_k8s_sync_announce_refusals_total counter
haproxy_k8s_sync_announce_refusals_total{announcer="bgp",peer="192.0.2.1",reason="notification received"} 2
haproxy_k8s_sync_announce_refusals_total{announcer="bgp",peer="2001:db8::1",reason="bad peer as"} 1
`
	if err := testutil.GatherAndCompare(r.Gatherer(), strings.NewReader(want), "haproxy_k8s_sync_announce_refusals_total"); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.GatherAndLint(r.Gatherer(), "haproxy_k8s_sync_announce_refusals_total"); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}
