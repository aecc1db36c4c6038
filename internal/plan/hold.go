package plan

// UntilChecked rewrites ops, as Ops lists them (each slot's operations
// together), so that a slot of a backend whose servers run a health check
// of their own (checked) serves a server it takes, new or returning, only
// once that server's check passes.
//
// HAProxy puts a checked server that leaves maintenance straight into
// service, its health set to rise ("start OK, check at once"), and a
// server at a new address keeps the health of the old one: a server whose
// check fails took connections until the check noticed (a node back from
// NotReady whose kube-proxy had not programmed the Service's endpoint yet:
// a connection lost). Forcing the health down while the slot is in
// maintenance is undone by leaving it, so the slot leaves maintenance
// into drain (no new connection from the balancing), its health is
// forced down, and then it is made ready: its check alone brings it up
// (rise passes; measured on 2.6.12 and 3.0.11: STOPPED until then).
//
// A slot comes into service when it was in maintenance, or drained and is
// made ready (a pass cut short between the drain and the rest leaves it
// there: the next pass holds it again), or takes another address, and ends
// ready or drained. Other slots' operations are kept as they are; ops is
// returned itself when no slot comes into service in a checked backend.
func UntilChecked(ops []Op, rt Runtime, checked func(backend string) bool) []Op {
	var out []Op
	for i := 0; i < len(ops); {
		j := i + 1
		for j < len(ops) && ops[j].Backend == ops[i].Backend && ops[j].Slot == ops[i].Slot {
			j++
		}
		g := ops[i:j]
		switch drained, in := comesIntoService(g, rt); {
		case in && checked(g[0].Backend):
			if out == nil {
				out = make([]Op, 0, len(ops)+2*(len(ops)-i))
				out = append(out, ops[:i]...)
			}
			out = appendHeld(out, g, drained)
		case out != nil:
			out = append(out, g...)
		}
		i = j
	}
	if out == nil {
		return ops
	}
	return out
}

// comesIntoService reports whether the operations g of one slot bring a
// server into service (see UntilChecked), from its state in rt, and
// whether it ends drained.
func comesIntoService(g []Op, rt Runtime) (drained, in bool) {
	var a Actual
	if i, ok := SlotIndex(g[0].Slot); ok && i < len(rt[g[0].Backend]) {
		a = rt[g[0].Backend][i]
	} else {
		a.Maint = true // a slot HAProxy does not report is none in service
	}
	newAddr, final := false, a
	for _, o := range g {
		switch o.Kind {
		case SetAddr:
			newAddr = true
		case Ready:
			final.Maint, final.Server.Drain = false, false
		case Drain:
			final.Maint, final.Server.Drain = false, true
		case Maint:
			final.Maint, final.Server.Drain = true, false
		}
	}
	if final.Maint {
		return false, false
	}
	return final.Server.Drain, a.Maint || newAddr || (a.Server.Drain && !final.Server.Drain)
}

// appendHeld appends the operations of one slot coming into service held
// until its check passes: its address, drain, health down, then ready
// unless it is to stay drained.
func appendHeld(out []Op, g []Op, drained bool) []Op {
	for _, o := range g {
		if o.Kind == SetAddr {
			out = append(out, o)
		}
	}
	op := g[0]
	op.Kind = Drain
	out = append(out, op)
	op.Kind = Down
	out = append(out, op)
	if !drained {
		op.Kind = Ready
		out = append(out, op)
	}
	return out
}
