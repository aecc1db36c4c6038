package driver

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
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
	d.verify.touch(ops)
	if _, err := d.rt.ExecChecked(ctx, cmds); err != nil {
		d.known = false
		return fmt.Errorf("runtime API: %w", err)
	}
	res.Ops += len(cmds)
	d.actual.Apply(ops)
	return nil
}
