package render

import (
	"strconv"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// writeHTTPRetry writes an HTTP backend's retry policy (model.Backend's
// RetryOn and Retries): structure, a backend of its own per policy. A
// policy that is not valid writes nothing (the defaults' retries stay).
func writeHTTPRetry(w func(...string), be *model.Backend) {
	if !be.HTTP || be.RetryOn == "" || !model.ValidRetryOn(be.RetryOn) || be.Retries < 0 || be.Retries > model.MaxRetries {
		return
	}
	w("\tretry-on " + be.RetryOn)
	w("\tretries " + strconv.Itoa(be.Retries))
	if be.RetryIdempotent {
		// After a connection failure HAProxy still retries (the request
		// was not sent); past it, never a method that is not idempotent.
		w("\thttp-request disable-l7-retry if METH_POST or { method PATCH } or { method LOCK }")
	}
}
