package plan

import (
	"strconv"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A renewal replaces every server of a backend by one created afresh at
// runtime, with the same name, address and state, and with no moment when
// a server in service has nothing in its place. It is how a server takes
// settings HAProxy reads only when it creates a server: the bundle of a
// CA file committed through the Runtime API, on a server presenting no
// client certificate (measured on 2.6.12 and 3.0.11: such a server keeps
// verifying with the bundle it was created with, a server added at
// runtime naming the file verifies with the committed one; docs/gateway.md,
// "CA files at runtime").
//
// HAProxy refuses a second server of the same name, so each server in
// service gets a twin (TwinName) that serves while the server is deleted
// and created again; the servers are created again in slot order, after
// all of them were deleted, so that `show servers state` lists them s1,
// s2, ... as RuntimeBuilder reads them (2.6 and 3.0 list a server added
// at runtime after the others).

// Phase is one step of a renewal: operations sent in one batch, but
// Delete operations, which the driver repeats one by one until HAProxy
// accepts them (it refuses while the server has connections), for a
// bounded time.
type Phase struct {
	Ops []Op
	// Up names the servers Ops brings into service whose health check
	// must pass before the next phase (none when the backend's servers
	// are not checked).
	Up []string
}

// TwinName is the name of the twin of slot i (0-based) during a renewal:
// no slot name (SlotIndex refuses it); RuntimeBuilder reports a backend
// caught with twins apart (Twins), and Settle ends its renewal.
func TwinName(i int) string { return "r" + strconv.Itoa(i+1) }

// Renew lists the phases that renew backend be, whose slots are in the
// states given (element i: slot model.SlotName(i)). checked says whether
// its servers run a health check of their own: a server brought into
// service is then held until its check passes (as UntilChecked holds a
// slot), and the next phase waits for it.
//
//  1. each slot in service gets a twin at its server, brought into
//     service as it is (ready or drained);
//  2. the slots in service go into maintenance: the twins serve;
//  3. every slot is deleted, once its connections are gone;
//  4. every slot is created again in order, at its address, and those
//     that were in service brought back;
//  5. the twins go into maintenance;
//  6. the twins are deleted, once their connections are gone.
//
// A backend with no slot has nothing to renew (nil).
func Renew(be string, states []Actual, checked bool) []Phase {
	if len(states) == 0 {
		return nil
	}
	var twinsIn, slotsOut, deleted, recreated, twinsOut, twinsGone Phase
	for i, a := range states {
		slot := model.SlotName(i)
		deleted.Ops = append(deleted.Ops, Op{Kind: Delete, Backend: be, Slot: slot})
		recreated.Ops = append(recreated.Ops, Op{Kind: Create, Backend: be, Slot: slot, Server: a.Server})
		if a.Maint {
			continue
		}
		twin := TwinName(i)
		twinsIn.Ops = append(twinsIn.Ops, Op{Kind: Create, Backend: be, Slot: twin, Server: a.Server})
		twinsIn.Ops, twinsIn.Up = bringIn(twinsIn.Ops, twinsIn.Up, be, twin, a.Server.Drain, checked)
		recreated.Ops, recreated.Up = bringIn(recreated.Ops, recreated.Up, be, slot, a.Server.Drain, checked)
		slotsOut.Ops = append(slotsOut.Ops, Op{Kind: Maint, Backend: be, Slot: slot})
		twinsOut.Ops = append(twinsOut.Ops, Op{Kind: Maint, Backend: be, Slot: twin})
		twinsGone.Ops = append(twinsGone.Ops, Op{Kind: Delete, Backend: be, Slot: twin})
	}
	if len(twinsIn.Ops) == 0 {
		// Nothing in service: no twin needed, no traffic to keep.
		return []Phase{deleted, recreated}
	}
	return []Phase{twinsIn, slotsOut, deleted, recreated, twinsOut, twinsGone}
}

// bringIn appends the operations that bring server srv of be, created in
// maintenance, into service (drained when drain), held until its check
// passes when checked (appendHeld, as UntilChecked holds a slot), and adds
// srv to up when its check must pass.
func bringIn(ops []Op, up []string, be, srv string, drain, checked bool) ([]Op, []string) {
	op := Op{Kind: Ready, Backend: be, Slot: srv}
	if checked {
		return appendHeld(ops, []Op{op}, drain), append(up, srv)
	}
	if drain {
		op.Kind = Drain
	}
	return append(ops, op), up
}
