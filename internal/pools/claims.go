package pools

import (
	"net/netip"
	"slices"
	"strings"
)

// Holder is who holds an address's claim (internal/claims): the key of
// its request ("namespace/name", GatewayKey) and its allow-shared-ip key.
type Holder struct{ Key, ShareKey string }

// Claims are the claimed addresses and their holders. Claims are made by
// one controller at a time per address (the apiserver creates one object
// per address, atomically), so two controllers sharing the pools never
// both publish one address: each publishes only what Usable lets it.
//
// In the allocation (AllocateClaimed) a claimed address goes only to its
// holder, whatever the objects' ages (the first claim wins: nothing
// published moves), or to a request sharing the holder's allow-shared-ip
// key while the holder uses it (ports compared), or, the holder gone, to a
// sharer whose status lists it.
type Claims map[netip.Addr]Holder

// keepCurrents gives every request the current addresses it may keep,
// before anyone is served, so no new request takes an address a Service
// already has; and before them what each holds a claim of (claimed, its
// status not yet written).
func (st *state) keepCurrents(reqs []Request) {
	held := st.holdings(reqs)
	for _, claims := range []bool{true, false} {
		for i := range reqs {
			r := &reqs[i]
			cur := r.Current
			if claims {
				cur = held[r.Key]
			}
			for _, a := range cur {
				if (st.has(r, family(a)) && !r.Exact) || !wants(r, family(a)) || !st.keepable(r, a) || !st.free(r, a) {
					continue
				}
				st.take(r, a)
			}
		}
	}
}

// holdings is each request's claimed addresses, by key, and records which
// requests hold a claim: those take their claims first.
func (st *state) holdings(reqs []Request) map[string][]netip.Addr {
	held := make(map[string][]netip.Addr, len(st.claimed))
	for a, h := range st.claimed {
		held[h.Key] = append(held[h.Key], a)
	}
	for _, as := range held {
		slices.SortFunc(as, func(a, b netip.Addr) int { return a.Compare(b) })
	}
	st.holders = make(map[string]bool, len(held))
	for i := range reqs {
		if held[reqs[i].Key] != nil {
			st.holders[reqs[i].Key] = true
		}
	}
	return held
}

// claimedByOther reports whether a's claim keeps it from r.
func (st *state) claimedByOther(r *Request, a netip.Addr) bool {
	h, ok := st.claimed[a]
	switch {
	case !ok || h.Key == r.Key:
		return false
	case h.ShareKey == "" || h.ShareKey != r.ShareKey:
		return true
	}
	// A sharer joins a holder using it (free compares the ports), or
	// keeps what its status lists when the holder is gone.
	return st.used[a] == nil && (st.holders[h.Key] || !slices.Contains(r.Ours, a))
}

// claimedUnused counts p's addresses claimed but used by no request (the
// holder not yet seen using it): assigned all the same.
func (st *state) claimedUnused(p *Pool) int64 {
	var n int64
	for a := range st.claimed {
		if st.used[a] == nil && st.owner(a) == p {
			n++
		}
	}
	return n
}

// takenBy names who has a: its users, else its claim's holder.
func (st *state) takenBy(a netip.Addr) string {
	if u := st.used[a]; u != nil {
		return strings.Join(u.keys, ", ")
	}
	return st.claimed[a].Key
}

// Usable is what a request (key, with allow-shared-ip key share) may bind
// and publish of the addresses Allocate gave it (assigned): those claimed
// for it, or for a holder it shares the address with, and those its
// status already lists (published before they were claimed: kept while
// the claim is being made). The rest are pending: claimed first, used on
// a later pass. With claims nil (no claims are made), all are usable.
func (c Claims) Usable(key, share string, published, assigned []netip.Addr) (usable, pending []netip.Addr) {
	if c == nil {
		return assigned, nil
	}
	for _, a := range assigned {
		h, ok := c[a]
		switch {
		case ok && (h.Key == key || (h.ShareKey != "" && h.ShareKey == share)):
			usable = append(usable, a)
		case !ok && slices.Contains(published, a):
			usable = append(usable, a)
		default:
			pending = append(pending, a)
		}
	}
	return usable, pending
}

// SplitClaimed leaves in res.Assigned, for each request of published
// (key: the addresses its status lists; every request of the caller's
// own kind, none of the reservations), only what it may use
// (Claims.Usable), and moves the rest to res.Pending. share: each
// request's allow-shared-ip key. Nothing moves with c nil.
func (res *Result) SplitClaimed(c Claims, published map[string][]netip.Addr, share map[string]string) {
	if c == nil {
		return
	}
	for k, pub := range published {
		as, ok := res.Assigned[k]
		if !ok {
			continue
		}
		use, pend := c.Usable(k, share[k], pub, as)
		if len(use) == 0 {
			delete(res.Assigned, k)
		} else {
			res.Assigned[k] = use
		}
		if len(pend) > 0 {
			if res.Pending == nil {
				res.Pending = map[string][]netip.Addr{}
			}
			res.Pending[k] = pend
		}
	}
}
