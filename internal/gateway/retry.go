package gateway

import (
	"slices"
	"strconv"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A rule's retry policy (HTTPRouteRetry) is HAProxy's retry-on and
// retries, which 2.6 sets per backend only (3.2's set-retries changes
// the count per request, never the codes): a rule with a policy sends
// its requests to a backend of its own per Service port and policy (the
// Service port's backend name, "r", the attempts and the codes), beside
// the plain one other rules share. Which policy a rule uses is map
// data; a policy not seen before on that Service port is a new backend
// (structure: a reload on 2.6 unless a spare of the pool takes it; on
// 3.4 a backend created at runtime). A retry also follows a failed
// connection, a connection closed without an answer and the server
// timeout firing (model.RetryEvents: HTTPRouteRetryConnectionError,
// HTTPRouteRetryBackendTimeout).

// defaultRetries is the attempts of a policy that gives none: the
// defaults section's retries.
const defaultRetries = 2

// checkRetry returns why a rule's retry policy cannot be served ("" when
// it can): codes HAProxy cannot retry on, too many attempts, a backoff.
func checkRetry(r *gwv1.HTTPRouteRetry) string {
	if r == nil {
		return ""
	}
	for _, c := range r.Codes {
		if !slices.Contains(model.RetryCodes, int(c)) {
			return "retry code " + strconv.Itoa(int(c)) + " is not supported (401, 403, 404, 408, 425, 500-504)"
		}
	}
	if r.Attempts != nil && (*r.Attempts < 0 || *r.Attempts > model.MaxRetries) {
		return "retry attempts " + strconv.Itoa(*r.Attempts) + " is not 0.." + strconv.Itoa(model.MaxRetries)
	}
	if r.Backoff != nil {
		return "retry backoff is not supported (HAProxy retries at once)"
	}
	return ""
}

// retryOn is a checked policy's retry-on keywords and retries.
func retryOn(r *gwv1.HTTPRouteRetry) (string, int) {
	codes := make([]int, 0, len(r.Codes))
	for _, c := range r.Codes {
		codes = append(codes, int(c))
	}
	slices.Sort(codes)
	words := slices.Clone(model.RetryEvents)
	for _, c := range slices.Compact(codes) {
		words = append(words, strconv.Itoa(c))
	}
	n := defaultRetries
	if r.Attempts != nil {
		n = *r.Attempts
	}
	return strings.Join(words, " "), n
}

// withRetry points a rule's weighted backends at their retrying twins
// (created in backends when missing): the same servers, with the rule's
// policy. The reject backend stays.
func withRetry(out []model.WeightedBackend, r *gwv1.HTTPRouteRetry, backends map[string]*model.Backend) []model.WeightedBackend {
	if r == nil || checkRetry(r) != "" {
		return out
	}
	on, n := retryOn(r)
	tag := "r" + strconv.Itoa(n)
	for _, w := range strings.Fields(on)[len(model.RetryEvents):] {
		tag += "-" + w
	}
	out = slices.Clone(out)
	for i, wb := range out {
		b := backends[wb.Name]
		if b == nil || wb.Name == model.RejectBackend || !b.HTTP {
			continue
		}
		twin := name(wb.Name, tag)
		if _, ok := backends[twin]; !ok {
			c := *b
			c.Name, c.RetryOn, c.Retries = twin, on, n
			backends[twin] = &c
		}
		out[i].Name = twin
	}
	return out
}
