package ingress

import (
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// The access-control annotations: who an Ingress serves, by the client's
// source address (ingress-nginx's allowlist-source-range, its older name
// whitelist-source-range, and denylist-source-range; HAProxy Ingress's
// keys of the same names), compiled into the route model's
// model.HTTPAccess of every action of the Ingress's paths: map data, no
// reload; proxy-body-size, the largest request body (413 above it); and
// limit-rps and limit-connections, per client (503 beyond them), but for
// the sources of limit-whitelist.
// A value that does not parse refuses the Ingress (its last good
// version keeps serving): an access list is never served open.

// maxRanges bounds the ranges of one annotation.
const maxRanges = 1000

// access are the source-range annotations, checked.
type access struct {
	allow, deny []netip.Prefix
	allowKey    string             // the key allow was read from
	maxBody     int64              // proxy-body-size in bytes; 0: none
	rps, conns  int32              // limit-rps, limit-connections; 0: none
	rpm         int32              // limit-rpm (ingress-nginx's); 0: none
	exempt      []netip.Prefix     // limit-whitelist: sources the limits skip
	auth        *model.BasicAuth   // auth.go, resolved by compileOne
	clientCert  uint8              // authtls.go: model.HTTPAccess.ClientCert, set by compileOne
	matchCN     string             // authtls.go: model.HTTPAccess.MatchCN, set by compileOne
	ext         *model.ExtAuth     // extauth.go, set by compileOne
	noLog       bool               // enable-access-log: false
	rewrite     model.ProxyRewrite // proxyrewrite.go
	global      globalLimit        // globallimit.go
	satisfyAny  bool               // satisfy: any (ingress-nginx's)
}

// maxLimit bounds limit-rps and limit-connections.
const maxLimit = 1_000_000

// parseAccess reads key (canonical; name without its prefix) into s when
// it is a source-range key: done is false for the others, why says what
// is wrong with a malformed value.
func (s *parsed) parseAccess(key, name, val string) (why string, done bool) {
	if strings.HasPrefix(key, NginxPrefix) {
		if why, done := parseProxyRewrite(&s.access.rewrite, name, val); done { // proxyrewrite.go
			return why, true
		}
		if why, done := s.access.global.parse(name, val); done { // globallimit.go
			return why, true
		}
	}
	switch name {
	case "allowlist-source-range", "whitelist-source-range", "denylist-source-range":
	case "limit-whitelist":
		ranges, why := parseRanges(val)
		if why == "" {
			s.access.exempt = ranges
		}
		return why, true
	case "proxy-body-size":
		return s.parseBodySize(val), true
	case "satisfy":
		// nginx's satisfy: any or all (the default).
		if val != "any" && val != "all" {
			return settings.ShowValue(val) + " is not any or all", true
		}
		s.access.satisfyAny = val == "any"
		return "", true
	case "enable-access-log":
		b, err := strconv.ParseBool(val)
		if err != nil {
			return settings.ShowValue(val) + " is not true or false", true
		}
		s.access.noLog = !b
		return "", true
	case "client-body-buffer-size":
		// Checked, nothing rendered: HAProxy streams every body through
		// its buffer and never writes one to disk (docs/ingress.md, "Body size").
		_, why := sizeBytes(val)
		return why, true
	case "limit-rps", "limit-connections", "limit-rpm":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 || n > maxLimit {
			return settings.ShowValue(val) + " is not a whole number from 0 to " + strconv.Itoa(maxLimit), true
		}
		switch name {
		case "limit-rps":
			s.access.rps = int32(n)
		case "limit-rpm":
			s.access.rpm = int32(n)
		default:
			s.access.conns = int32(n)
		}
		return "", true
	default:
		return "", false
	}
	ranges, why := parseRanges(val)
	if why != "" {
		return why, true
	}
	a := &s.access
	if name == "denylist-source-range" {
		for _, r := range ranges {
			if !slices.Contains(a.deny, r) {
				a.deny = append(a.deny, r)
			}
		}
		return "", true
	}
	prefix := strings.TrimSuffix(key, name)
	switch {
	case a.allowKey == "":
	case strings.HasPrefix(a.allowKey, prefix) && name == "whitelist-source-range":
		// The older name of a key given under its new name too: the new
		// one is read (keys come sorted: allowlist first).
		return "", true
	case !slices.Equal(a.allow, ranges):
		return "differs from " + a.allowKey + ": which clients are allowed is ambiguous", true
	}
	a.allow, a.allowKey = ranges, key
	return "", true
}

// parseRanges reads a list of CIDR ranges or addresses, separated by
// commas or spaces (an address is the range of itself alone); each range
// masked, each once, in the order given.
func parseRanges(val string) ([]netip.Prefix, string) {
	var out []netip.Prefix
	for _, f := range strings.FieldsFunc(val, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil || a.Zone() != "" {
				return nil, settings.ShowValue(f) + " is not an IPv4 or IPv6 address or CIDR range"
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if p.Addr().Zone() != "" {
			return nil, settings.ShowValue(f) + " is not an IPv4 or IPv6 address or CIDR range"
		}
		p = p.Masked()
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
		if len(out) > maxRanges {
			return nil, "more than " + strconv.Itoa(maxRanges) + " ranges"
		}
	}
	if len(out) == 0 {
		return nil, "no range"
	}
	return out, ""
}

// model is the access control of the Ingress's actions: nil when it has
// none.
func (a access) model() *model.HTTPAccess {
	rw := proxyRewrite(a.rewrite) // proxyrewrite.go
	global := a.global.model()    // globallimit.go
	if len(a.allow) == 0 && len(a.deny) == 0 && a.maxBody == 0 && a.rps == 0 && a.conns == 0 && a.rpm == 0 && a.auth == nil && a.clientCert == 0 && a.ext == nil && !a.noLog && a.matchCN == "" && rw == nil && global == nil {
		return nil // limit-whitelist alone exempts from no limit
	}
	var exempt []netip.Prefix
	if a.rps > 0 || a.conns > 0 || a.rpm > 0 {
		exempt = slices.Clone(a.exempt)
	}
	return &model.HTTPAccess{Allow: slices.Clone(a.allow), Deny: slices.Clone(a.deny), MaxBody: a.maxBody, RPS: a.rps, Conns: a.conns, RPM: a.rpm, Exempt: exempt, Auth: a.auth, ClientCert: a.clientCert, ExtAuth: a.ext, NoLog: a.noLog, MatchCN: a.matchCN, Rewrite: rw, Global: global, SatisfyAny: a.satisfyAny}
}

// bodySize is a body size: digits and an optional unit k, m or g (of
// 1024), ingress-nginx's and HAProxy Ingress's; 0 and HAProxy Ingress's
// "unlimited" are no limit.
var bodySize = regexp.MustCompile(`^([0-9]{1,12})([kKmMgG]?)$`)

// maxBody bounds a body size: 1 TiB.
const maxBody = 1 << 40

// parseBodySize reads proxy-body-size into s.access.maxBody.
func (s *parsed) parseBodySize(val string) string {
	if val == "unlimited" {
		s.access.maxBody = 0
		return ""
	}
	n, why := sizeBytes(val)
	if why == "" {
		s.access.maxBody = n
	}
	return why
}

// sizeBytes reads an nginx size (digits and k, m or g, of 1,024) up to
// 1 TiB.
func sizeBytes(val string) (int64, string) {
	m := bodySize.FindStringSubmatch(val)
	if m == nil {
		return 0, settings.ShowValue(val) + " is not a size (digits and k, m or g)"
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	n <<= map[string]int{"": 0, "k": 10, "m": 20, "g": 30}[strings.ToLower(m[2])]
	if n > maxBody {
		return 0, settings.ShowValue(val) + " is larger than 1 TiB"
	}
	return n, ""
}
