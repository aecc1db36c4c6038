package dataplaneapi

import (
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Followers whose own maintenance is owed. A slot that follows a node
// (track _nodes/sK) and leaves service while its node is out (a node
// deleted: its slot goes to maintenance and every server of it leaves
// every backend; or a server of a node that is excluded or NotReady goes)
// inherits the node's maintenance at once: one request on _nodes/sK
// stops all of them. Its own state is another matter. The API v3.4.0
// sets a server's admin state only when it differs from the one it
// reads, and a follower of a node in maintenance reads "maint" whatever
// its own state (measured, TestContractTrackFacts), so a PUT of "maint"
// for such a follower changes nothing: its own state stays "ready", and
// it would serve again, at its old address, the moment its node's slot
// leaves maintenance.
//
// So the driver does not send those requests (a node deleted costs one
// request, not one per backend it served) and records the followers as
// owed (d.owed: slot → its node's slot). Their configuration is written
// with maintenance as usual (the coalesced background write); the next
// reload gives them their own maintenance from it, and clears the
// record. Until then:
//
//   - a node's slot with owed followers that is free (its node deleted)
//     is held (model.Slot.Held): plan.Assign gives it back only to the
//     node it remembers, never to another one, whose address the owed
//     followers do not point at;
//   - when a node's slot with owed followers leaves maintenance (its node
//     back), those that are to stay out are set to maintenance right
//     after it (the API takes it then): they point at that very node,
//     in service again, for the few milliseconds in between; those that
//     serve again need no request at all (their own state is ready);
//   - a single slot written in the background as a server PUT, which the
//     API applies at runtime, gets its own maintenance there.
//
// A driver that reads the runtime afresh cannot tell an owed follower
// from one in maintenance of its own: it takes every follower in
// maintenance of a node in maintenance, that is to stay out, for owed.

// nodeState is what a slot of the model.NodesBackend runs and is to run.
type nodeState struct{ run, want string }

// nodeStates maps the model.NodesBackend's slots of want to their admin
// states (nil when servers follow no node).
func (d *Driver) nodeStates(want *state) map[string]nodeState {
	nb := want.backends[model.NodesBackend]
	if nb == nil {
		return nil
	}
	run := d.rt[model.NodesBackend]
	out := make(map[string]nodeState, len(nb.children))
	for _, o := range nb.children {
		name, _ := o["name"].(string)
		st := nodeState{run: "unknown", want: runtimeOf(o).admin}
		if r, ok := run[name]; ok {
			st.run = r.admin
		}
		out[name] = st
	}
	return out
}

// followed is the model.NodesBackend slot a server follows, "" for none.
func followed(o Object) string {
	t, _ := o["track"].(string)
	name, _ := strings.CutPrefix(t, model.NodesBackend+"/")
	if name == t {
		return ""
	}
	return name
}

// follower decides op for a slot that may follow a node: false to leave
// it out (owed), else op is to be sent, after the others when it needs
// its node out of maintenance first.
func (d *Driver) follower(op *rtOp, o Object, nodes map[string]nodeState) bool {
	node := followed(o)
	n, ok := nodes[node]
	if node == "" || !ok || op.to.admin != "maint" || op.from.admin == "maint" {
		if len(d.owed) > 0 {
			delete(d.owed, op.key()) // any op sets its own state
		}
		return true
	}
	moved := op.from.addr != op.to.addr || op.from.port != op.to.port
	switch {
	case n.want == "maint" && !moved:
		d.owed[op.key()] = node // inherited; the API could not set it
		return false
	case n.want == "maint":
		op.owe = node // the address goes; the state may not take
	case n.run != "ready" && n.run != "drain":
		op.after = true // the API takes it once the node is out of maintenance
	}
	return true
}

// settled records what a successful op left of a follower's own state.
func (d *Driver) settled(op rtOp) {
	key := op.key()
	if op.owe == "" {
		if len(d.owed) > 0 {
			delete(d.owed, key)
		}
		return
	}
	st := d.rt[op.backend][op.server]
	st.admin = op.from.admin
	d.rt[op.backend][op.server] = st
	d.owed[key] = op.owe
}

// suspectOwed: the backends in read were just read from the runtime;
// a follower in maintenance of a node in maintenance, which is to stay
// out, may have a state of its own that is ready (owed): its own state is
// recorded as unknown, so that runtimeOps treats it as owed.
func (d *Driver) suspectOwed(want *state, read []string) {
	nodes := d.nodeStates(want)
	if nodes == nil {
		return
	}
	for _, be := range read {
		sec, run := want.backends[be], d.rt[be]
		if be == model.NodesBackend || sec == nil {
			continue
		}
		for _, o := range sec.children {
			name, _ := o["name"].(string)
			node := followed(o)
			if node == "" || nodes[node].run != "maint" || runtimeOf(o).admin != "maint" {
				continue
			}
			if st, ok := run[name]; ok && st.admin == "maint" {
				st.admin = "unknown"
				run[name] = st
			}
		}
	}
}

// holdNodes marks the free slots of the model.NodesBackend in prev that
// owed followers follow as held (and no other), on a copy.
func (d *Driver) holdNodes(prev model.Layout) {
	slots := prev[model.NodesBackend]
	held := make(map[string]bool, len(d.owed))
	for _, node := range d.owed {
		held[node] = true
	}
	copied := false
	for i, sl := range slots {
		h := held[model.SlotName(i)] && !sl.Used
		if sl.Held == h {
			continue
		}
		if !copied {
			slots, copied = append([]model.Slot(nil), slots...), true
			prev[model.NodesBackend] = slots
		}
		slots[i].Held = h
	}
}

// uncleanOwed drops from clean, when the model.NodesBackend is not in it
// (a node's state may have changed), the backends with owed followers.
func (d *Driver) uncleanOwed(clean map[string]bool) {
	if clean == nil || clean[model.NodesBackend] {
		return
	}
	for key := range d.owed {
		be, _, _ := cutKey(key)
		delete(clean, be)
	}
}

// persisted records that a slot was written as a server PUT, which the API
// applies at runtime: a follower written in maintenance has it of its
// own now.
func (d *Driver) persisted(be, name string, obj Object) {
	key := be + "/" + name
	if _, ok := d.owed[key]; !ok || obj["maintenance"] != "enabled" {
		return
	}
	delete(d.owed, key)
	if st, ok := d.rt[be][name]; ok {
		st.admin = "maint"
		d.rt[be][name] = st
	}
}

// resetRuntime forgets what HAProxy runs (read again when needed).
func (d *Driver) resetRuntime() {
	d.rt = map[string]map[string]rtSlot{}
	clear(d.owed)
}
