package ingress

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// Canary Ingresses (ingress-nginx's canary, canary-by-header with
// canary-by-header-value or canary-by-header-pattern, canary-by-cookie,
// canary-weight and canary-weight-total): a canary joins the main
// Ingresses' paths with the same host, path and path type as rules of
// its own ahead of the main one (a header, then a cookie: ingress-nginx's
// precedence) and as the weight of the main path's action. Header and
// cookie matches are the route model's (model.HeaderMatch, a cookie as
// model.CookieMatch + NAME): map data, but a name new to the table is one
// reload (a header set is structure).

// canaryAnnotations are the canary annotations, checked.
type canaryAnnotations struct {
	on      bool
	weight  int // -1: none
	total   int
	header  string   // lower case
	want    string   // canary-by-header-value; "": always/never
	pattern []string // canary-by-header-pattern's values, when want is ""
	cookie  string   // canary-by-cookie
}

// maxPatternValues bounds the values of canary-by-header-pattern.
const maxPatternValues = 16

// headerPattern is the one form of canary-by-header-pattern served: a
// whole value among literal alternatives, ^v$ or ^(v1|v2|...)$ (a value
// of letters, digits, - _ ~ and \.). Any other regular expression would
// have HAProxy run a user's regex on every request.
var headerPattern = regexp.MustCompile(`^\^(?:\((?:\?:)?((?:[A-Za-z0-9_~-]|\\\.)+(?:\|(?:[A-Za-z0-9_~-]|\\\.)+)*)\)|((?:[A-Za-z0-9_~-]|\\\.)+))\$$`)

// parseCanary reads a canary key (name without its prefix) into c: done
// is false for the other keys.
func (c *canaryAnnotations) parseCanary(name, val string) (why string, done bool) {
	switch name {
	case "canary":
		b, err := strconv.ParseBool(val)
		if err != nil {
			return settings.ShowValue(val) + " is not true or false", true
		}
		c.on = b
	case "canary-weight", "canary-weight-total":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 || n > 1_000_000 {
			return settings.ShowValue(val) + " is not a whole number from 0 to 1000000", true
		}
		if name == "canary-weight" {
			c.weight = n
		} else {
			c.total = n
		}
	case "canary-by-header":
		h := strings.ToLower(val)
		if !model.ValidHeaderName(h) {
			return settings.ShowValue(val) + " is not a header name", true
		}
		c.header = h
	case "canary-by-header-value":
		if val == "" || !model.ValidHeaderValue(val) {
			return settings.ShowValue(val) + " is empty or has spaces, control characters or one of % # \\ \" ' | ;", true
		}
		c.want = val
	case "canary-by-header-pattern":
		m := headerPattern.FindStringSubmatch(val)
		if m == nil {
			return settings.ShowValue(val) + " is a regular expression not served: only ^v$ and ^(v1|v2|...)$ (values of letters, digits, - _ ~ and \\.) are", true
		}
		alts := strings.Split(m[1]+m[2], "|")
		if len(alts) > maxPatternValues {
			return "more than " + strconv.Itoa(maxPatternValues) + " values", true
		}
		c.pattern = c.pattern[:0]
		for _, a := range alts {
			c.pattern = append(c.pattern, strings.ReplaceAll(a, `\.`, "."))
		}
	case "canary-by-cookie":
		if !model.ValidCookieName(val) {
			return settings.ShowValue(val) + " is not a cookie name of letters, digits, - and _ (at most 64)", true
		}
		c.cookie = val
	default:
		return "", false
	}
	return "", true
}

// finish checks the keys together: why the weight is not served.
func (c *canaryAnnotations) finish() string {
	if c.total == 0 || c.weight > c.total {
		return "the weight must be at most canary-weight-total, which must be positive"
	}
	return ""
}

// matches are the rules a canary adds on a main path whose backend is
// main: each a header match and the backend it chooses, in precedence
// order (the header's, then the cookie's).
func (c *canaryAnnotations) matches(main, canary string) []path {
	var out []path
	add := func(name, value, backend string) {
		out = append(out, path{backend: backend, headers: []model.HeaderMatch{{Name: name, Value: value}}})
	}
	if h := c.header; h != "" {
		switch {
		case c.want != "":
			add(h, c.want, canary)
		case len(c.pattern) > 0:
			for _, v := range c.pattern {
				add(h, v, canary)
			}
		default:
			add(h, "always", canary)
			add(h, "never", main)
		}
	}
	if n := c.cookie; n != "" {
		add(model.CookieMatch+n, "always", canary)
		add(model.CookieMatch+n, "never", main)
	}
	return out
}

// applyCanaries folds each canary Ingress into the main paths it shares
// a host, a path and a path type with: by header and cookie first (rules
// of their own ahead of the main one), then by weight. A canary with no
// main path is served nowhere, as ingress-nginx does.
func applyCanaries(units []*unit) []*unit {
	var mains []*unit
	for _, u := range units {
		if !u.set.canary.on {
			mains = append(mains, u)
		}
	}
	for _, c := range units {
		if !c.set.canary.on {
			continue
		}
		for _, cp := range c.paths {
			for _, m := range mains {
				for i, mp := range m.paths {
					if mp.host != cp.host || mp.typ != cp.typ || mp.value != cp.value || len(mp.headers) > 0 {
						continue
					}
					for _, x := range c.set.canary.matches(mp.backend, cp.backend) {
						x.host, x.typ, x.value, x.idx, x.ext, x.redirect = mp.host, mp.typ, mp.value, mp.idx, mp.ext, mp.redirect
						m.paths = append(m.paths, x)
					}
					if wt := c.set.canary.weight; wt >= 0 {
						// Both backends stay in the action at weight 0,
						// so a weight that comes and goes is map data.
						m.paths[i].weights = []model.WeightedBackend{{Name: mp.backend, Weight: int32(c.set.canary.total - wt)}, {Name: cp.backend, Weight: int32(wt)}}
					}
				}
			}
		}
	}
	return mains
}
