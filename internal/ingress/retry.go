package ingress

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// ingress-nginx's proxy-next-upstream and proxy-next-upstream-tries: when
// a request is passed to another Pod, and how many Pods it tries, on the
// route model's retry policy (model.Backend's RetryOn, Retries and
// RetryIdempotent, the HTTPRoute retry filter's: render/retry.go). A
// policy is structure in HAProxy 2.6 (retry-on and retries are backend
// keywords), so the Ingress's backends are backends of their own, named
// by the policy: its first use is one reload, every other Ingress with
// the same policy none.

// retryAnnotations are the retry annotations, checked.
type retryAnnotations struct {
	given   bool     // either key given
	words   []string // proxy-next-upstream's HAProxy retry-on keywords; nil: nginx's default, error timeout
	off     bool     // proxy-next-upstream: off
	nonIdem bool     // non_idempotent
	tries   int      // proxy-next-upstream-tries; 0: not given
}

// nginxDefaultTries is ingress-nginx's proxy-next-upstream-tries default.
const nginxDefaultTries = 3

// nextUpstream are the conditions of proxy-next-upstream (nginx's
// proxy_next_upstream words) as HAProxy's retry-on keywords.
var nextUpstream = map[string][]string{
	"error":          {"conn-failure", "empty-response"},
	"timeout":        {"conn-failure", "response-timeout"},
	"invalid_header": {model.RetryJunk},
	"http_500":       {"500"},
	"http_502":       {"502"},
	"http_503":       {"503"},
	"http_504":       {"504"},
	"http_403":       {"403"},
	"http_404":       {"404"},
}

// parseRetry reads a retry key (name without its prefix) into r: done is
// false for the other keys.
func (r *retryAnnotations) parseRetry(name, val string) (why string, done bool) {
	switch name {
	case "proxy-next-upstream":
		r.words, r.off, r.nonIdem = []string{}, false, false
		for _, f := range strings.Fields(val) {
			switch kw, ok := nextUpstream[f]; {
			case ok:
				r.words = append(r.words, kw...)
			case f == "off":
				r.off = true
			case f == "non_idempotent":
				r.nonIdem = true
			case f == "http_429":
				return "http_429 is not served: HAProxy 2.6 cannot retry a request on a 429 answer", true
			default:
				return settings.ShowValue(f) + " is not one of error, timeout, invalid_header, http_500, http_502, http_503, http_504, http_403, http_404, non_idempotent, off", true
			}
		}
		if r.off && (len(r.words) > 0 || r.nonIdem) {
			return "off with other conditions", true
		}
		if len(r.words) == 0 && !r.off {
			return "no condition (off turns retries off)", true
		}
	case "proxy-next-upstream-tries":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 || n > model.MaxRetries+1 {
			return settings.ShowValue(val) + " is not a whole number from 0 (as many as allowed) to " + strconv.Itoa(model.MaxRetries+1), true
		}
		r.tries = n
		if n == 0 {
			r.tries = model.MaxRetries + 1
		}
	default:
		return "", false
	}
	r.given = true
	return "", true
}

// policy is the Ingress's retry policy: "" when it gives none (the
// defaults' retries stay), else the retry-on keywords, the retries, the
// idempotent-only switch and the backends' name tag.
func (r *retryAnnotations) policy() (on string, retries int, idempotent bool, tag string) {
	if !r.given {
		return "", 0, false, ""
	}
	words := r.words
	if words == nil {
		words = append(slices.Clone(nextUpstream["error"]), nextUpstream["timeout"]...)
	}
	tries := cmp.Or(r.tries, nginxDefaultTries)
	retries = tries - 1
	if r.off {
		words, retries = []string{"conn-failure"}, 0
	}
	// HAProxy's order: the events first, then the codes, each once.
	var events, codes []string
	for _, w := range words {
		if _, err := strconv.Atoi(w); err == nil {
			codes = append(codes, w)
		} else {
			events = append(events, w)
		}
	}
	slices.SortFunc(events, func(a, b string) int { return slices.Index(retryEventOrder, a) - slices.Index(retryEventOrder, b) })
	slices.Sort(codes)
	on = strings.Join(append(slices.Compact(events), slices.Compact(codes)...), " ")
	idempotent = !r.nonIdem
	sum := sha256.Sum256([]byte(on + "|" + strconv.Itoa(retries) + "|" + strconv.FormatBool(idempotent)))
	return on, retries, idempotent, "r" + hex.EncodeToString(sum[:4])
}

// retryEventOrder is the order the retry-on events are written in.
var retryEventOrder = append(slices.Clone(model.RetryEvents), model.RetryJunk)
