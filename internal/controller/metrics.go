package controller

import (
	"errors"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
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
	outcome := metrics.OutcomeApplied
	switch {
	case errors.Is(err, driver.ErrDeferred):
		outcome = metrics.OutcomeDeferred
	case err != nil:
		outcome = metrics.OutcomeError
	}
	m.Pass(outcome, total)
	m.Phase(metrics.PhaseParse, parse)
	m.Phase(metrics.PhaseRender, res.Render)
	m.Phase(metrics.PhaseCheck, res.Check)
	m.Phase(metrics.PhaseWrite, res.Write)
	m.Phase(metrics.PhaseReload, res.Reload)
	m.Phase(metrics.PhaseRuntime, res.Runtime)
	// A driver sets Reasons when it tries a reload: Reloaded says
	// whether the reload itself succeeded.
	if len(res.Reasons) > 0 {
		m.Reload(res.Reasons, res.Reloaded)
	}
	m.RuntimeCommands(res.Ops+res.OpsFailed, res.OpsFailed)
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
	m.Model(d.Config)
}
