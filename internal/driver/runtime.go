package driver

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// commands turns plan operations into Runtime API commands.
func commands(ops []plan.Op) []string {
	out := make([]string, 0, len(ops))
	for _, o := range ops {
		target := o.Backend + "/" + o.Slot
		switch o.Kind {
		case plan.SetAddr:
			out = append(out, "set server "+target+" addr "+o.Server.Addr.String()+" port "+strconv.Itoa(int(o.Server.Port)))
		case plan.Ready:
			out = append(out, "set server "+target+" state ready")
		case plan.Drain:
			out = append(out, "set server "+target+" state drain")
		case plan.Maint:
			out = append(out, "set server "+target+" state maint")
		}
	}
	return out
}

// execOps sends ops in one pipelined batch and records them as applied. Any
// failure leaves the runtime state unknown, so the next pass reads it back.
func (d *HAProxy) execOps(ctx context.Context, ops []plan.Op, res *Result) error {
	if len(ops) == 0 {
		return nil
	}
	t := time.Now()
	defer func() { res.Runtime += time.Since(t) }()
	cmds := commands(ops)
	if _, err := d.rt.ExecChecked(ctx, cmds); err != nil {
		d.known = false
		return fmt.Errorf("runtime API: %w", err)
	}
	res.Ops += len(cmds)
	d.actual.Apply(ops)
	return nil
}

func (d *HAProxy) schedulePersist() {
	select {
	case d.persist <- struct{}{}:
	default:
	}
}

// Run keeps the config file and the server-state file in step with what
// runs, so that a restart of HAProxy comes back to the same state. Writes
// are coalesced: at most one per interval. It returns when ctx ends.
func (d *HAProxy) Run(ctx context.Context, interval time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.persist:
		}
		d.flush(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// flush renders outside the driver's lock, so that passes are not held up
// at tens of thousands of servers, and writes only if nothing changed
// meanwhile (otherwise a newer flush follows).
func (d *HAProxy) flush(ctx context.Context) {
	d.mu.Lock()
	if !d.known {
		d.mu.Unlock()
		return
	}
	cfg, layout, gen := d.desired, d.layout, d.gen
	d.mu.Unlock()

	text := render.ConfigWithHash(cfg, layout, d.opts.Render, d.flushHashes.StructureHash(cfg, layout, d.opts.Render))

	d.mu.Lock()
	if !d.known || d.gen != gen {
		d.mu.Unlock()
		d.schedulePersist()
		return
	}
	if !d.upToDate(text) {
		// Only server lines differ from the validated config that runs.
		if err := writeAtomic(d.opts.ConfigPath, text, nil); err != nil {
			d.mu.Unlock()
			d.log.Error("could not persist config", "err", err)
			return
		}
		d.written = text
		d.gen++
	}
	d.mu.Unlock()
	if err := d.saveState(ctx); err != nil {
		d.log.Warn("could not persist server state", "err", err)
	}
}
