package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestAnnounce: the announcer's two gauges, labelled with its name, lint
// clean; a nil recorder does nothing.
func TestAnnounce(t *testing.T) {
	r := New(Options{Version: "test"})
	a := r.Announce("bgp")
	a.Addresses(3)
	a.Sessions(2)
	want := `# HELP haproxy_k8s_sync_announce_sessions_up Sessions with the routers that are up (BGP: established).
# TYPE haproxy_k8s_sync_announce_sessions_up gauge
haproxy_k8s_sync_announce_sessions_up{announcer="bgp"} 2
# HELP haproxy_k8s_sync_announced_addresses Addresses this host announces now (BGP: routes announced to its routers; 0 while its health gate fails).
# TYPE haproxy_k8s_sync_announced_addresses gauge
haproxy_k8s_sync_announced_addresses{announcer="bgp"} 3
`
	if err := testutil.GatherAndCompare(r.Gatherer(), strings.NewReader(want), "haproxy_k8s_sync_announce_sessions_up", "haproxy_k8s_sync_announced_addresses"); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.GatherAndLint(r.Gatherer(), "haproxy_k8s_sync_announce_sessions_up", "haproxy_k8s_sync_announced_addresses"); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
	var none *Announce
	none.Addresses(1)
	none.Sessions(1)
}
