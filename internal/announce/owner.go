package announce

import (
	"encoding/binary"
	"hash/fnv"
	"net/netip"
	"slices"
)

// Host is what one host of the group says about itself (in its last
// heartbeat, or, for this host, what it knows now).
type Host struct {
	ID      string
	Healthy bool
	// Fresh: within its hold-down (holddown.go): it keeps what it holds
	// but is given a free address only when no steady host is healthy.
	Fresh bool
	// Claims are the addresses the host holds (see Hold).
	Claims map[netip.Addr]Hold
}

// Hold is how a host holds an address: the term of its taking (terms
// order the takings of one address) and its support, the fewest hosts it
// heard (itself included) since it took the address.
type Hold struct {
	Term    uint64 `json:"term"`
	Support int    `json:"support"`
}

// beats is whether h wins an address over o; rank breaks a tie.
func (h Hold) beats(o Hold) bool {
	if h.Support != o.Support {
		return h.Support > o.Support
	}
	return h.Term > o.Term
}

// Owner is who should hold an address, and how.
type Owner struct {
	Host string
	Hold
}

// Assign is the owner of each address among the healthy hosts (the live
// ones: a host not heard from within the hold time is not passed), the
// same on every host that heard the same heartbeats:
//
//   - Sticky: an address a healthy host holds stays there. When several
//     hold it (a partition healed, or two hosts decided on different
//     views), the one with the most support keeps it (the side of a
//     partition that heard more hosts, or the host whose view was right),
//     then the newest taking (highest term), then the lowest rank; the
//     others let go.
//   - An address no healthy host holds goes to the healthy host holding
//     the fewest addresses so far (addresses taken in order), the lowest
//     rank among equals: addresses spread over the hosts, and a host that
//     returns takes only what is free, nothing moves back to it (for
//     one hold time after its start it takes nothing, after its return
//     to health nothing it heard no peer claim since it fell: it first
//     hears what was taken meanwhile, holddown.go); a fresh
//     host (within its hold-down) only when no healthy host is steady,
//     so that a flapping host is given nothing to lose again. Its term
//     is one more than any seen for the address (seen: the highest term
//     this host ever heard for each address, claims of hosts not passed
//     included), its support the number of hosts passed (Node.Decide
//     counts fewer for a taking from a silent holder: Node.support).
//
// The rank of a host for an address is a hash of both (rendezvous
// hashing), so ties break the same way everywhere without favouring one
// host for every address. Addresses no healthy host can hold are left
// out.
func Assign(addrs []netip.Addr, hosts []Host, seen map[netip.Addr]uint64) map[netip.Addr]Owner {
	out := make(map[netip.Addr]Owner, len(addrs))
	healthy := make([]Host, 0, len(hosts))
	for _, h := range hosts {
		if h.Healthy {
			healthy = append(healthy, h)
		}
	}
	if len(healthy) == 0 {
		return out
	}
	load := make(map[string]int, len(healthy))
	var free []netip.Addr
	for _, a := range addrs {
		best, found := Owner{}, false
		for _, h := range healthy {
			c, ok := h.Claims[a]
			if !ok {
				continue
			}
			if !found || c.beats(best.Hold) || c == best.Hold && rank(a, h.ID) < rank(a, best.Host) {
				best, found = Owner{Host: h.ID, Hold: c}, true
			}
		}
		if !found {
			free = append(free, a)
			continue
		}
		out[a] = best
		load[best.Host]++
	}
	slices.SortFunc(free, netip.Addr.Compare)
	steady := slices.DeleteFunc(slices.Clone(healthy), func(h Host) bool { return h.Fresh })
	if len(steady) == 0 {
		steady = healthy
	}
	for _, a := range free {
		var pick string
		for _, h := range steady {
			if pick == "" || load[h.ID] < load[pick] || load[h.ID] == load[pick] && rank(a, h.ID) < rank(a, pick) {
				pick = h.ID
			}
		}
		term := seen[a]
		for _, h := range hosts {
			term = max(term, h.Claims[a].Term)
		}
		out[a] = Owner{Host: pick, Hold: Hold{Term: term + 1, Support: len(hosts)}}
		load[pick]++
	}
	return out
}

// rank orders the hosts for one address.
func rank(a netip.Addr, host string) uint64 {
	h := fnv.New64a()
	b := a.As16()
	h.Write(b[:])
	h.Write([]byte(host))
	var s [8]byte
	binary.BigEndian.PutUint64(s[:], h.Sum64())
	// one more round of mixing: FNV's low bits differ little between
	// hosts whose names differ only at the end
	h.Reset()
	h.Write(s[:])
	return h.Sum64()
}
