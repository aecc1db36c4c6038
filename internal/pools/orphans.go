package pools

import (
	"net/netip"
	"slices"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// keepOrphans lets each request keep the addresses of its Ours that no
// pool holds (Request.Ours): the pool they came from was deleted, or its
// spec could not be read when the controller started (it then knows no
// last good spec). They are taken before any request is served, so no
// other Service gets one, and a pool that comes back (or a new one over
// them) counts them as assigned. A request that asks for other addresses
// or another usable pool does not keep them.
func (st *state) keepOrphans(reqs []Request) {
	type listing struct {
		n     int
		share string // the share key of every lister, or "" when any has none or they differ
	}
	listed := map[netip.Addr]*listing{}
	for i := range reqs {
		for _, a := range reqs[i].Ours {
			l := listed[a]
			if l == nil {
				l = &listing{share: reqs[i].ShareKey}
				listed[a] = l
			} else if l.share != reqs[i].ShareKey {
				l.share = ""
			}
			l.n++
		}
	}
	for i := range reqs {
		r := &reqs[i]
		for _, a := range r.Ours {
			l := listed[a]
			switch {
			case st.owner(a) != nil, l.n > 1 && l.share == "", r.Exact:
			case model.ListenAddrProblem(a) != "": // from a pool written before such ranges were refused
			case !wants(r, family(a)) || st.has(r, family(a)):
			case len(r.IPs) > 0 && !slices.Contains(r.IPs, a):
			case r.Pool != "" && st.byName[r.Pool] != nil && !st.byName[r.Pool].Frozen:
			case !st.free(r, a):
			default:
				st.take(r, a)
			}
		}
	}
}
