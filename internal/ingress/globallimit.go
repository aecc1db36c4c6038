package ingress

import (
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// ingress-nginx's global-rate-limit, -window, -key and -ignored-cidrs:
// the requests an Ingress serves per key (by default the client's
// address) in a window, 429 beyond (model.GlobalLimit on the access
// control of the Ingress's actions: map data, no reload). ingress-nginx
// shares the counts of its replicas through memcached; ours are each
// HAProxy process's own. A limit without a window, a window that is not
// a duration of whole seconds from 1s to 1h, a key with anything but
// nginx variables and plain text, or ranges that do not parse refuse the
// Ingress (its last good version keeps serving).

// globalLimit are the global-rate-limit annotations, checked.
type globalLimit struct {
	limit   int32          // global-rate-limit; 0: none
	window  int32          // global-rate-limit-window in seconds; 0: not given
	key     string         // global-rate-limit-key; "": $remote_addr
	ignored []netip.Prefix // global-rate-limit-ignored-cidrs
	scope   string         // the Ingress's namespace/name, set by compileOne
}

// remoteAddr is the default key: the client's address.
const remoteAddr = "$remote_addr"

// parse reads key name into g: done is false for the others.
func (g *globalLimit) parse(name, val string) (why string, done bool) {
	switch name {
	case "global-rate-limit":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 || n > maxLimit {
			return settings.ShowValue(val) + " is not a whole number from 0 to " + strconv.Itoa(maxLimit), true
		}
		g.limit = int32(n)
	case "global-rate-limit-window":
		d, err := time.ParseDuration(val)
		if err != nil || d < time.Second || d > model.MaxGlobalWindow*time.Second || d%time.Second != 0 {
			return settings.ShowValue(val) + " is not a duration of whole seconds from 1s to 1h (30s, 1m, 1h)", true
		}
		g.window = int32(d / time.Second)
	case "global-rate-limit-key":
		if val == remoteAddr || val == "${remote_addr}" {
			g.key = ""
			return "", true
		}
		if why := model.GlobalKeyProblem(val); why != "" {
			return settings.ShowValue(val) + ": " + why, true
		}
		g.key = val
	case "global-rate-limit-ignored-cidrs":
		ranges, why := parseRanges(val) // access.go
		if why != "" {
			return why, true
		}
		g.ignored = ranges
	default:
		return "", false
	}
	return "", true
}

// finish says what is wrong with the keys together ("" when nothing).
func (g *globalLimit) finish() string {
	if g.limit > 0 && g.window == 0 {
		return "annotation " + NginxPrefix + "global-rate-limit: needs " + NginxPrefix + "global-rate-limit-window (the window the limit counts in)"
	}
	return ""
}

// model is the limit: nil when there is none.
func (g globalLimit) model() *model.GlobalLimit {
	if g.limit == 0 || g.window == 0 {
		return nil
	}
	return &model.GlobalLimit{Limit: g.limit, Window: g.window, Key: g.key, Ignored: slices.Clone(g.ignored), Scope: g.scope}
}
