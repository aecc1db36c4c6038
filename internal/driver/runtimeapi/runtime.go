package runtimeapi

import (
	"context"
	"fmt"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
	"slices"
	"strconv"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// commands turns plan operations into Runtime API commands; args are the
// `add server` keywords of the backends whose slots ops create
// (runtimeslots.go).
func commands(ops []plan.Op, args map[string]string) []string {
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
		case plan.Down:
			out = append(out, "set server "+target+" health down")
		case plan.Create:
			out = append(out, createCommands(o, args[o.Backend], false)...)
		}
	}
	return out
}

// execOps sends ops in one pipelined batch and records them as applied. Any
// failure leaves the runtime state unknown, so the next pass reads it back.
func (d *HAProxy) execOps(ctx context.Context, ops []plan.Op, res *driver.Result) error {
	_, err := d.sendOps(ctx, ops, res, nil)
	return err
}

// sendOps is execOps that, given stop, keeps at most opsWindow operations
// in flight and sends no more once stop says true (see preempt.go). It
// returns how many operations were sent and recorded.
func (d *HAProxy) sendOps(ctx context.Context, ops []plan.Op, res *driver.Result, stop func() bool) (int, error) {
	if len(ops) == 0 {
		return 0, nil
	}
	t := time.Now()
	defer func() { res.Runtime += time.Since(t) }()
	cmds := commands(ops, d.slotArgs)
	d.verify.touch(ops) // all of them: conservative when stopped early
	var ans []string
	var err error
	window := opsWindow
	if d.opts.opsWindow > 0 {
		window = d.opts.opsWindow
	}
	if stop == nil || len(ops) <= window {
		ans, err = d.rt.ExecChecked(ctx, cmds)
	} else {
		ans, err = d.rt.ExecCheckedUntil(ctx, cmds, window, stop)
	}
	if err != nil {
		d.known = false
		res.OpsFailed += len(cmds)
		return 0, fmt.Errorf("runtime API: %w", err)
	}
	res.Ops += len(ans)
	d.actual.Apply(ops[:len(ans)])
	return len(ans), nil
}

// upThenDown splits ops, in their order, into the operations of slots
// that stay or come into service (their first operation is no Maint or
// Drain, or they are held until their check passes: plan.UntilChecked)
// and those of slots that leave it, each slot's operations kept
// together: the driver sends the first before a route map change and the
// second after, so that neither the backend a route moves to nor the one
// it leaves is ever without a server in service while the route names it.
func upThenDown(ops []plan.Op) (up, down []plan.Op) {
	for i := 0; i < len(ops); {
		j := i + 1
		for j < len(ops) && ops[j].Backend == ops[i].Backend && ops[j].Slot == ops[i].Slot {
			j++
		}
		held := slices.ContainsFunc(ops[i:j], func(o plan.Op) bool { return o.Kind == plan.Down })
		if k := ops[i].Kind; k == plan.Maint || (k == plan.Drain && !held) {
			down = append(down, ops[i:j]...)
		} else {
			up = append(up, ops[i:j]...)
		}
		i = j
	}
	return up, down
}
