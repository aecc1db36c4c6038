package dataplaneapi

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// rtSlot is what HAProxy runs for one slot: the address, port and admin
// state the runtime endpoints report and set.
type rtSlot struct {
	addr  string
	port  int64
	admin string // ready, drain, maint
}

// runtimeOf is what a slot's configuration runs right after a reload.
func runtimeOf(o Object) rtSlot {
	s := rtSlot{admin: "ready"}
	s.addr, _ = o["address"].(string)
	s.port, _ = toInt(o["port"])
	if o["maintenance"] == "enabled" {
		s.admin = "maint"
	}
	return s
}

// wantRuntime is what a slot of the target should run: its configuration,
// in drain when the model says so.
func wantRuntime(be string, o Object, drain map[string]bool) rtSlot {
	s := runtimeOf(o)
	if s.admin == "ready" && drain[be+"/"+fmt.Sprint(o["name"])] {
		s.admin = "drain"
	}
	return s
}

// rtOp is a change of one slot at runtime.
type rtOp struct {
	backend, server string
	from, to        rtSlot
	// after: the slot follows a node whose slot is in maintenance now
	// and leaves it in this pass; the API takes "maint" for the follower
	// only once its node is out of maintenance (owed.go), so the op is
	// sent after the others. owe: the follower's node stays in
	// maintenance, so the admin state of the op may not take (it is
	// recorded as owed).
	after bool
	owe   string
}

func (o rtOp) key() string { return o.backend + "/" + o.server }

// runtimeOps lists the runtime changes that make HAProxy run want, for
// the backends not in clean: those whose running slots (as d.rt knows
// them) differ from their target. A follower going to maintenance while
// its node is in maintenance and stays there is not sent: it inherits
// the node's, and the API could not set its own (owed.go).
func (d *Driver) runtimeOps(want *state, drain map[string]bool, clean map[string]bool) []rtOp {
	var ops []rtOp
	nodes := d.nodeStates(want)
	for _, be := range dirtyKeys(want.backends, clean) {
		running := d.rt[be]
		follows := be != model.NodesBackend && nodes != nil
		for _, o := range want.backends[be].children {
			name, _ := o["name"].(string)
			to := wantRuntime(be, o, drain)
			from, ok := running[name]
			if !ok {
				from = rtSlot{admin: "unknown"}
			}
			op := rtOp{backend: be, server: name, from: from, to: to}
			if follows {
				if !d.follower(&op, o, nodes) {
					continue
				}
			}
			if from != to {
				ops = append(ops, op)
			}
		}
	}
	return ops
}

// runtimeParallel is how many runtime requests are under way at once: the
// API answers each in about a millisecond, mostly waiting on HAProxy's
// socket, and answers several at a time.
const runtimeParallel = 4

// applyRuntime makes the changes through the runtime endpoints (no
// reload, no configuration write), a few at a time, those marked after
// once the others are made, and records in d.rt what HAProxy now runs
// (the caller holds d.mu).
func (d *Driver) applyRuntime(ctx context.Context, ops []rtOp, p *Pass) error {
	var first, second []rtOp
	for _, op := range ops {
		if op.after {
			second = append(second, op)
		} else {
			first = append(first, op)
		}
	}
	if err := d.applyOps(ctx, first, p); err != nil {
		return err // the ops after wait for the next pass: they need these
	}
	return d.applyOps(ctx, second, p)
}

func (d *Driver) applyOps(ctx context.Context, ops []rtOp, p *Pass) error {
	if len(ops) == 0 {
		return nil
	}
	errs := make([]error, len(ops))
	writes := make([]int, len(ops))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(runtimeParallel, len(ops)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				writes[i], errs[i] = d.setRuntime(ctx, ops[i])
			}
		}()
	}
	for i := range ops {
		work <- i
	}
	close(work)
	wg.Wait()
	var first error
	for i, op := range ops {
		p.Writes += writes[i]
		if errs[i] != nil {
			if first == nil {
				first = fmt.Errorf("server %s at runtime: %w", op.key(), errs[i])
			}
			delete(d.rt[op.backend], op.server) // unknown now: read again
			continue
		}
		if d.rt[op.backend] == nil {
			d.rt[op.backend] = map[string]rtSlot{}
		}
		d.rt[op.backend][op.server] = op.to
		d.settled(op)
	}
	return first
}

// setRuntime changes one slot. A slot that takes another address while it
// serves goes to maintenance first and back after (the API sets the admin
// state before the address, so a slot going from maintenance to ready at
// a new address takes two requests: never ready at the old one).
func (d *Driver) setRuntime(ctx context.Context, op rtOp) (int, error) {
	moved := op.from.addr != op.to.addr || op.from.port != op.to.port
	body := dataplane.Object{}
	if moved {
		body["address"] = op.to.addr
		if op.to.port > 0 { // the model.NodesBackend's servers have none
			body["port"] = op.to.port
		}
	}
	if !moved || op.to.admin == "maint" {
		body["admin_state"] = op.to.admin
		return 1, d.c.SetRuntimeServer(ctx, op.backend, op.server, body)
	}
	if op.from.admin != "maint" {
		body["admin_state"] = "maint"
	}
	if err := d.c.SetRuntimeServer(ctx, op.backend, op.server, body); err != nil {
		return 0, err
	}
	return 2, d.c.SetRuntimeServer(ctx, op.backend, op.server, dataplane.Object{"admin_state": op.to.admin})
}

// readRuntime reads what HAProxy runs for the backends of want that
// d.rt does not know, a few at a time, and returns their names.
func (d *Driver) readRuntime(ctx context.Context, want *state) ([]string, error) {
	var missing []string
	for be := range want.backends {
		if _, ok := d.rt[be]; !ok {
			missing = append(missing, be)
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	sort.Strings(missing)
	got := make([]map[string]rtSlot, len(missing))
	errs := make([]error, len(missing))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(runtimeParallel, len(missing)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				got[i], errs[i] = d.readBackendRuntime(ctx, missing[i])
			}
		}()
	}
	for i := range missing {
		work <- i
	}
	close(work)
	wg.Wait()
	for i, be := range missing {
		if errs[i] != nil {
			return nil, fmt.Errorf("reading the runtime state of %s: %w", be, errs[i])
		}
		d.rt[be] = got[i]
	}
	return missing, nil
}

func (d *Driver) readBackendRuntime(ctx context.Context, be string) (map[string]rtSlot, error) {
	rs, err := d.c.RuntimeServers(ctx, be)
	if err != nil {
		return nil, err
	}
	out := make(map[string]rtSlot, len(rs))
	for _, r := range rs {
		name, _ := r["name"].(string)
		s := rtSlot{admin: fmt.Sprint(r["admin_state"])}
		s.addr, _ = r["address"].(string)
		s.port, _ = toInt(r["port"])
		out[name] = s
	}
	return out, nil
}

// runtimeFromConfig records that HAProxy runs want's configuration, as it
// does right after a reload: drains and other runtime changes are gone.
func (d *Driver) runtimeFromConfig(want *state) {
	d.rt = make(map[string]map[string]rtSlot, len(want.backends))
	clear(d.owed) // every follower has its own state from the configuration
	for be, sec := range want.backends {
		m := make(map[string]rtSlot, len(sec.children))
		for _, o := range sec.children {
			name, _ := o["name"].(string)
			m[name] = runtimeOf(o)
		}
		d.rt[be] = m
	}
}
