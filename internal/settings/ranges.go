package settings

import (
	"net/netip"
	"slices"
	"strings"
	"time"
)

// SourceRangesAnnotation is the Kubernetes annotation that restricts a
// LoadBalancer Service's clients when spec.loadBalancerSourceRanges is
// empty (as kube-proxy and cloud providers read it).
const SourceRangesAnnotation = "service.beta.kubernetes.io/load-balancer-source-ranges"

// SourceRangesField names spec.loadBalancerSourceRanges in messages.
const SourceRangesField = "spec.loadBalancerSourceRanges"

// maxSourceRanges bounds the prefixes of one Service: they become one
// HAProxy ACL and one nftables set each.
const maxSourceRanges = 1000

// RangeError is an invalid source range of a Service. errors.Is(err,
// ErrInvalid) holds.
type RangeError struct{ FieldError }

// ParseSourceRanges reads the client ranges a Service allows: spec (each
// entry one CIDR) when it is not empty, else the annotation's value (CIDRs
// separated by commas, spaces around them ignored), as Kubernetes does.
// The result is sorted, masked and without duplicates; nil means every
// client. Anything but an IPv4 or IPv6 prefix (no zone, no leading zeros,
// no host names) is an error: the caller then keeps the last good ranges,
// never something wider than what was asked.
func ParseSourceRanges(spec []string, annotation string) ([]netip.Prefix, error) {
	key, items := SourceRangesField, spec
	if len(spec) == 0 {
		annotation = strings.TrimSpace(annotation)
		if annotation == "" {
			return nil, nil
		}
		key, items = SourceRangesAnnotation, strings.Split(annotation, ",")
	}
	if len(items) > maxSourceRanges {
		return nil, &RangeError{FieldError{Key: key, Value: strings.Join(items[:3], ",") + ",...",
			Reason: "more than 1000 ranges"}}
	}
	out := make([]netip.Prefix, 0, len(items))
	for _, it := range items {
		p, err := netip.ParsePrefix(strings.TrimSpace(it))
		if err != nil || p.Addr().Zone() != "" {
			v := it
			if len(v) > 64 {
				v = v[:64] + "..."
			}
			return nil, &RangeError{FieldError{Key: key, Value: v,
				Reason: "want a CIDR such as 192.0.2.0/24 or 2001:db8::/32"}}
		}
		if p.Addr().Is4In6() {
			// ::ffff:a.b.c.d/n, n >= 96: the IPv4 range a.b.c.d/(n-96) it
			// stands for (HAProxy, like the kernel, takes an IPv4-mapped
			// client for an IPv4 one). Shorter, it would also span IPv6
			// addresses outside ::ffff:0:0/96: which family was meant is
			// unclear, so it is refused. Checked before masking, which
			// would turn it into a prefix that is not IPv4-mapped.
			if p.Bits() < 96 {
				return nil, &RangeError{FieldError{Key: key, Value: it, Reason: "an IPv4-mapped prefix shorter than /96"}}
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	slices.SortFunc(out, ComparePrefix)
	return slices.Compact(out), nil
}

// ComparePrefix orders prefixes by address, then length.
func ComparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}

// FormatSourceRanges is the canonical text of parsed ranges (what
// Settings.SourceRanges holds): comma-separated, as parsed.
func FormatSourceRanges(p []netip.Prefix) string {
	s := make([]string, len(p))
	for i, x := range p {
		s[i] = x.String()
	}
	return strings.Join(s, ",")
}

// SourceRangesOf parses Settings.SourceRanges back; "" is nil (anyone).
// The text only ever comes from FormatSourceRanges, or from a last-good
// file written from it: anything else is dropped entry by entry, so a
// damaged file cannot widen what HAProxy lets in (an unreadable entry
// leaves the others; none at all leaves a range no client has).
func SourceRangesOf(s string) []netip.Prefix {
	if s == "" {
		return nil
	}
	var out []netip.Prefix
	for _, it := range strings.Split(s, ",") {
		if p, err := netip.ParsePrefix(it); err == nil && p.Addr().Zone() == "" {
			out = append(out, p.Masked())
		}
	}
	if len(out) == 0 {
		out = []netip.Prefix{netip.MustParsePrefix("255.255.255.255/32")}
	}
	return out
}

// MaxAffinityTimeout is the longest sessionAffinityConfig.clientIP.timeoutSeconds
// Kubernetes accepts (a day); DefaultAffinityTimeout is its default (3h).
const (
	MaxAffinityTimeout     = 24 * time.Hour
	DefaultAffinityTimeout = 3 * time.Hour
)
