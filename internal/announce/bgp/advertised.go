package bgp

import (
	"context"
	"net/netip"
	"slices"

	"github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
)

// Advertised is, for each address this host announces, the routers it
// is advertised to now: those whose session is Established and whose
// Adj-RIB-Out holds the address's host route. An address advertised to
// no router is not in it (nil once Run has ended).
func (a *Announcer) Advertised(ctx context.Context) map[netip.Addr][]string {
	return a.advertised.Ask(ctx)
}

// Holders implements announce.Reporter: this host, named by its router
// ID, for each address it advertises to at least one router now
// (Advertised; a speaker does not hear the others, and a route in no
// established session's Adj-RIB-Out reaches no router).
func (a *Announcer) Holders(ctx context.Context) announce.Holders {
	return a.holders(addrsOf(a.Advertised(ctx)))
}

// addrsOf is the addresses of adv, sorted.
func addrsOf(adv map[netip.Addr][]string) []netip.Addr {
	addrs := make([]netip.Addr, 0, len(adv))
	for ad := range adv {
		addrs = append(addrs, ad)
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	return addrs
}

// adjOut is what the speaker advertises to each router whose session is
// up (up, by peer address), read from GoBGP's Adj-RIB-Out of that peer,
// by address, the routers sorted.
func adjOut(s *server.BgpServer, peers []Peer, fams func(Peer) []api.Family_Afi, up map[string]bool) map[netip.Addr][]string {
	out := map[netip.Addr][]string{}
	for _, p := range peers {
		name := p.Addr.String()
		if !up[name] {
			continue
		}
		for _, afi := range fams(p) {
			family := bgp.RF_IPv4_UC
			if afi == api.Family_AFI_IP6 {
				family = bgp.RF_IPv6_UC
			}
			_ = s.ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_ADJ_OUT, Name: name, Family: family},
				func(nlri bgp.NLRI, paths []*apiutil.Path) {
					pfx, err := netip.ParsePrefix(nlri.String())
					if err != nil || !pfx.IsSingleIP() || !slices.ContainsFunc(paths, func(x *apiutil.Path) bool { return !x.Withdrawal }) {
						return
					}
					ad := pfx.Addr().Unmap()
					if !slices.Contains(out[ad], name) {
						out[ad] = append(out[ad], name)
					}
				})
		}
	}
	for ad := range out {
		slices.Sort(out[ad])
	}
	return out
}
