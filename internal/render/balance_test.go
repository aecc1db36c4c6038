package render

import (
	"bytes"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// TestGoldenHashedBalance: an HTTP backend balanced by a request's
// property (an Ingress's upstream-hash-by: the URI, a header, a query
// parameter) hashes it onto a consistent ring; HAProxy accepts each.
func TestGoldenHashedBalance(t *testing.T) {
	cfg := httpRouted()
	for _, b := range []string{"uri", "uri whole", "hdr(x-user)", "url_param id"} {
		be := *cfg.Backends[1]
		be.Name, be.Balance = be.Name+"_h"+string(rune('0'+len(cfg.Backends))), b
		cfg.Backends = append(cfg.Backends, &be)
	}
	layout, _ := plan.Assign(cfg, nil, true)
	got := Config(cfg, layout, opts)
	golden.Assert(t, "balance.cfg", got)
	if n := bytes.Count(got, []byte("\thash-type consistent\n")); n != 4 {
		t.Errorf("%d backends hash onto a consistent ring, want 4", n)
	}
	golden.HAProxyAccepts(t, got)
}
