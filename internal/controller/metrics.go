package controller

import (
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
)

// Synced reports whether every informer cache has synced (for /readyz).
func (c *Controller) Synced() bool { return c.src.Synced() }

// record reports one pass to the metrics: its outcome and phases, the
// reload it made or tried, the Runtime API commands, and the size of what
// HAProxy is asked to run.
func (c *Controller) record(d desired.Result, res driver.Result, parse, total time.Duration, err error) {
	m := c.opts.Metrics
	if m == nil {
		return
	}
	m.Applied(d.Config, res, err, parse, total)
	refused := make(map[string]int, 4)
	seen := make(map[string]bool, len(d.Problems))
	for _, p := range d.Problems {
		k := p.Reason + "\x00" + p.Service.Namespace + "/" + p.Service.Name
		if !seen[k] {
			seen[k] = true
			refused[p.Reason]++
		}
	}
	m.Services(len(d.Configured), refused)
}
