package metrics

import (
	"errors"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Outcome is the outcome label of a pass that ended with err.
func Outcome(err error) string {
	switch {
	case errors.Is(err, driver.ErrDeferred):
		return OutcomeDeferred
	case err != nil:
		return OutcomeError
	}
	return OutcomeApplied
}

// Applied records one pass that handed cfg to a driver: its outcome
// (from err) and duration, the phases the driver ran (parse is the
// caller's own phase, 0 when it has none), the reload it made or tried,
// the Runtime API commands, and the size of cfg. Every loop that drives
// HAProxy (Services, apiservers) records its passes through it.
func (i *Instance) Applied(cfg model.Config, res driver.Result, err error, parse, total time.Duration) {
	if i == nil {
		return
	}
	i.Pass(Outcome(err), total)
	i.Phase(PhaseParse, parse)
	i.Phase(PhaseRender, res.Render)
	i.Phase(PhaseCheck, res.Check)
	i.Phase(PhaseWrite, res.Write)
	i.Phase(PhaseReload, res.Reload)
	i.Phase(PhaseRuntime, res.Runtime)
	// A driver sets Reasons when it tries a reload: Reloaded says
	// whether the reload itself succeeded.
	if len(res.Reasons) > 0 {
		i.Reload(res.Reasons, res.Reloaded)
	}
	i.RuntimeCommands(res.Ops+res.OpsFailed, res.OpsFailed)
	i.Model(cfg)
	i.FileDescriptors(res.FDs)
}

// FileDescriptors records the open files the configuration of a reload
// needs against HAProxy's limit, when the driver computed them (a pass
// that tried no reload leaves the last values).
func (i *Instance) FileDescriptors(f driver.FDs) {
	if i == nil || f.Need == 0 {
		return
	}
	i.r.fds.WithLabelValues(i.name, "needed").Set(float64(f.Need))
	i.r.fds.WithLabelValues(i.name, "limit").Set(float64(f.Limit))
}
