package controller

import (
	"net/netip"
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

// poolAnnounced is, pure, what an AddressPool's status says of the
// announcers: how many of the addresses in its ranges are announced now
// (holders: who announces each, as the leader's announcer knows) and
// who announces each, the first pools.MaxAnnouncedBy by address (at
// most pools.MaxHostsPerAddress hosts each, by name). An
// address nobody announces is neither counted nor listed.
func poolAnnounced(ranges []pools.Range, holders announce.Holders) (int64, []pools.AddressHolders) {
	var in []netip.Addr
	for a, hs := range holders {
		if len(hs) > 0 && slices.ContainsFunc(ranges, func(r pools.Range) bool { return r.Contains(a) }) {
			in = append(in, a)
		}
	}
	slices.SortFunc(in, netip.Addr.Compare)
	by := make([]pools.AddressHolders, 0, min(len(in), pools.MaxAnnouncedBy))
	for _, a := range in[:min(len(in), pools.MaxAnnouncedBy)] {
		hs := slices.Clone(holders[a])
		slices.Sort(hs)
		hs = hs[:min(len(hs), pools.MaxHostsPerAddress)]
		by = append(by, pools.AddressHolders{Address: a.String(), Hosts: hs})
	}
	return int64(len(in)), by
}

// withAnnounced is st with what the announcers say of the pool's
// ranges; st as it is when no announcer reports (holders nil).
func withAnnounced(st pools.AddressPoolStatus, ranges []pools.Range, holders announce.Holders) pools.AddressPoolStatus {
	if holders == nil {
		return st
	}
	n, by := poolAnnounced(ranges, holders)
	st.Announced, st.AnnouncedBy = &n, by
	return st
}
