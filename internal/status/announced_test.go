package status

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// TestWithAnnounced: with this host's snapshot of who announces each
// address, every row names the hosts announcing its listen addresses
// (IPv4, IPv6 in HAProxy's bind syntax, "-" for an address nobody
// announces, a row listening on all addresses), the table says whose
// view it is and how old; a stale snapshot names nobody ("?") and says
// so. Golden files: status-announced*.txt, status-announced.json.
func TestWithAnnounced(t *testing.T) {
	now := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	rows := func() []Row {
		return []Row{
			{Service: "default/web", Frontend: "fe_default_web_80", Listen: []string{"192.0.2.10:80", "2001:db8::10:80"}, Backend: "be_default_web_80", Up: 2, LastChange: time.Minute},
			{Service: "default/dns", Frontend: "fe_default_dns_53", Listen: []string{"192.0.2.11:53"}, Backend: "be_default_dns_53", Up: 1, LastChange: time.Minute},
			{Service: "prod/all", Frontend: "fe_prod_all_8080", Listen: []string{":8080"}, Backend: "be_prod_all_8080", Up: 1, LastChange: time.Minute},
		}
	}
	snap := announce.Snapshot{Announcer: "l2", Updated: now.Add(-2 * time.Second), Holders: map[netip.Addr][]string{
		netip.MustParseAddr("192.0.2.10"): {"lb1"}, netip.MustParseAddr("2001:db8::10"): {"lb2"}, netip.MustParseAddr("198.51.100.1"): {"lb3"},
	}}
	for _, tc := range []struct {
		name string
		snap announce.Snapshot
		json bool
	}{
		{"status-announced", snap, true},
		{"status-announced-stale", func() announce.Snapshot { s := snap; s.Updated = now.Add(-time.Minute); return s }(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Report{InSync: true, FileHash: "HASH", RunningHash: "HASH", Rows: rows()}
			r.WithAnnounced(tc.snap, now)
			var table bytes.Buffer
			if err := r.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, tc.name+".txt", table.Bytes())
			if tc.json {
				var js bytes.Buffer
				if err := r.WriteJSON(&js); err != nil {
					t.Fatal(err)
				}
				golden.Assert(t, tc.name+".json", js.Bytes())
			}
		})
	}
}
