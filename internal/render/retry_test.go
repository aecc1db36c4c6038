package render

import (
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// TestGoldenHTTPRetry: an HTTP backend with a retry policy writes its
// retry-on and retries, which HAProxy accepts; a policy that is not
// valid (a code HAProxy cannot retry on, syntax, too many retries)
// writes nothing; a policy for idempotent requests only turns L7
// retries off for POST, PATCH and LOCK.
func TestGoldenHTTPRetry(t *testing.T) {
	cfg := httpRouted()
	twin := *cfg.Backends[1]
	twin.Name, twin.RetryOn, twin.Retries = twin.Name+"_r3-500-503", "conn-failure empty-response response-timeout 500 503", 3
	safe := twin
	safe.Name, safe.RetryIdempotent = twin.Name+"_idem", true
	cfg.Backends = append(cfg.Backends, &twin, &safe)
	for i, bad := range []struct {
		on string
		n  int
	}{{"599", 1}, {"500\n\tretries 99", 1}, {"500 500", 1}, {"500", model.MaxRetries + 1}, {" 500", 1}} {
		b := *cfg.Backends[1]
		b.Name, b.RetryOn, b.Retries = b.Name+"_bad"+string(rune('0'+i)), bad.on, bad.n
		cfg.Backends = append(cfg.Backends, &b)
	}
	layout, _ := plan.Assign(cfg, nil, true)
	got := Config(cfg, layout, opts)
	golden.Assert(t, "retry.cfg", got)
	golden.HAProxyAccepts(t, got)
}
