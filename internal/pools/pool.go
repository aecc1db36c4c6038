// Package pools hands out LoadBalancer addresses from AddressPools. It is
// pure: pools and requests in, assignments, problems and per-pool counts
// out. The caller rebuilds the requests from the Services on every pass,
// each carrying the addresses its status already lists (Current), so an
// address stays with its Service across restarts and leader changes and
// is never handed out twice.
package pools

import (
	"fmt"
	"math"
	"math/big"
	"net/netip"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// Range is the addresses first..last (inclusive) of one family.
type Range struct{ First, Last netip.Addr }

// Contains reports whether a is in r.
func (r Range) Contains(a netip.Addr) bool {
	return a.BitLen() == r.First.BitLen() && r.First.Compare(a) <= 0 && a.Compare(r.Last) <= 0
}

// size is the number of addresses in r, saturated at MaxInt64.
func (r Range) size() int64 {
	f, l := new(big.Int).SetBytes(r.First.AsSlice()), new(big.Int).SetBytes(r.Last.AsSlice())
	n := new(big.Int).Sub(l, f)
	n.Add(n, big.NewInt(1))
	if !n.IsInt64() {
		return math.MaxInt64
	}
	return n.Int64()
}

// String is "first-last", or the prefix when r is exactly one.
func (r Range) String() string {
	for b := 0; b <= r.First.BitLen(); b++ {
		p := netip.PrefixFrom(r.First, b)
		if p.Masked().Addr() == r.First && lastOf(p) == r.Last {
			return p.String()
		}
	}
	return r.First.String() + "-" + r.Last.String()
}

func lastOf(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// ParseRange reads one entry of spec.addresses: a CIDR ("192.0.2.0/28",
// "2001:db8::/120") or a range of one family ("192.0.2.10-192.0.2.20").
// Nothing else: no zones, no spaces inside, no mapped IPv4.
func ParseRange(s string) (Range, error) {
	bad := func(why string) (Range, error) {
		return Range{}, fmt.Errorf("address range %q: %s", s, why)
	}
	if a, b, ok := strings.Cut(s, "-"); ok {
		first, err1 := netip.ParseAddr(a)
		last, err2 := netip.ParseAddr(b)
		if err1 != nil || err2 != nil || first.Zone() != "" || last.Zone() != "" || first.Is4In6() || last.Is4In6() {
			return bad("want FIRST-LAST, two addresses")
		}
		if first.BitLen() != last.BitLen() {
			return bad("the two ends are of different families")
		}
		if last.Less(first) {
			return bad("the last address is before the first")
		}
		return checkSpecial(s, Range{first, last})
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || p.Addr().Zone() != "" || p.Addr().Is4In6() {
		return bad("want a CIDR such as 192.0.2.0/28 or a range FIRST-LAST")
	}
	if p.Masked() != p {
		return bad("host bits are set (want " + p.Masked().String() + ")")
	}
	return checkSpecial(s, Range{p.Addr(), lastOf(p)})
}

// special are the addresses no pool may hand out (model.ListenAddrProblem):
// a Service given one would bind every address (and collide with every
// other Service), or one that is not a single host's.
var special = []struct {
	p   netip.Prefix
	why string
}{
	{netip.MustParsePrefix("0.0.0.0/32"), "the unspecified address 0.0.0.0"},
	{netip.MustParsePrefix("255.255.255.255/32"), "the broadcast address 255.255.255.255"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast addresses (224.0.0.0/4)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local addresses (169.254.0.0/16)"},
	{netip.MustParsePrefix("::/128"), "the unspecified address ::"},
	{netip.MustParsePrefix("ff00::/8"), "multicast addresses (ff00::/8)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local addresses (fe80::/10)"},
}

// checkSpecial refuses a range that holds a special address: the whole
// pool is then unusable, with this message in its condition, rather than
// some of its addresses silently skipped.
func checkSpecial(s string, r Range) (Range, error) {
	for _, sp := range special {
		if sp.p.Addr().BitLen() == r.First.BitLen() && r.First.Compare(lastOf(sp.p)) <= 0 && sp.p.Addr().Compare(r.Last) <= 0 {
			return Range{}, fmt.Errorf("address range %q: holds %s, which no Service may listen on", s, sp.why)
		}
	}
	return r, nil
}

// Selector matches labels; nil matches everything (the caller builds it
// from a metav1.LabelSelector).
type Selector interface {
	Matches(labels map[string]string) bool
}

// Pool is one AddressPool, parsed.
type Pool struct {
	Name       string
	Ranges     []Range
	AutoAssign bool
	// Namespaces, when not empty, are the only namespaces whose Services
	// the pool serves; NamespaceSelector and ServiceSelector (nil: any)
	// must match too.
	Namespaces        []string
	NamespaceSelector Selector
	ServiceSelector   Selector
	// Priority orders the pools that match a Service: lower first, then
	// by name.
	Priority int
	// Frozen: the pool's current spec cannot be used; this is its last
	// good one, which keeps the addresses already assigned from it and
	// gives out none.
	Frozen bool
}

// serves reports whether p may give an address to r at all.
func (p *Pool) serves(r *Request) bool {
	if len(p.Namespaces) > 0 && !contains(p.Namespaces, r.Namespace) {
		return false
	}
	if p.NamespaceSelector != nil && !p.NamespaceSelector.Matches(r.NamespaceLabels) {
		return false
	}
	return p.ServiceSelector == nil || p.ServiceSelector.Matches(r.Labels)
}

func (p *Pool) holds(a netip.Addr) bool {
	for _, r := range p.Ranges {
		if r.Contains(a) {
			return true
		}
	}
	return false
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// ParseIPs reads the load-balancer-ips annotation: addresses separated
// by commas, at most one per family.
func ParseIPs(s string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, it := range strings.Split(s, ",") {
		a, err := netip.ParseAddr(strings.TrimSpace(it))
		if err != nil || a.Zone() != "" || a.Is4In6() {
			return nil, &settings.FieldError{Key: IPsAnnotation, Value: s, Reason: "want IP[,IP], one address per family"}
		}
		if why := model.ListenAddrProblem(a); why != "" {
			return nil, &settings.FieldError{Key: IPsAnnotation, Value: s, Reason: a.String() + " is " + why + ", which no Service may listen on"}
		}
		for _, o := range out {
			if o.Is4() == a.Is4() {
				return nil, &settings.FieldError{Key: IPsAnnotation, Value: s, Reason: "two addresses of one family"}
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// Annotations a Service asks with.
const (
	IPsAnnotation      = settings.IPsAnnotation
	PoolAnnotation     = settings.PoolAnnotation
	SharedIPAnnotation = settings.SharedIPAnnotation
)
