package plan

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// trackCfg is a config whose backend "be" follows its nodes; up and down
// list the nodes' addresses (10.0.0.N), servers are on port 80.
func trackCfg(nodes []model.Server, servers ...model.Server) model.Config {
	return model.Config{Backends: []*model.Backend{
		{Name: model.NodesBackend, Servers: nodes},
		{Name: "be", Balance: "roundrobin", TrackNodes: true, Servers: servers},
	}}
}

func nodeSrv(a string, down bool) model.Server {
	s := srv(a, 0)
	s.Maint = down
	return s
}

// slotsOf describes a backend's slots as "name:addr/track" (addr "-" for a
// free slot).
func slotsOf(slots []model.Slot) []string {
	var out []string
	for i, s := range slots {
		addr := "-"
		if s.Used {
			addr = s.Server.Key().String()
			if s.Server.Maint {
				addr += "(maint)"
			}
		}
		track := ""
		if s.Track != 0 {
			track = model.SlotName(int(s.Track) - 1)
		}
		out = append(out, fmt.Sprintf("%s:%s/%s", model.SlotName(i), addr, track))
	}
	return out
}

func TestAssignBindsSlotsToNodes(t *testing.T) {
	n1, n2, n3 := nodeSrv("10.0.0.1", false), nodeSrv("10.0.0.2", false), nodeSrv("10.0.0.3", false)
	a, b, c := srv("10.0.0.1", 80), srv("10.0.0.2", 80), srv("10.0.0.3", 80)
	// At a reload, every used slot follows its node's slot; free ones none.
	base, ex := Assign(trackCfg([]model.Server{n1, n2}, a, b), nil, true)
	if len(ex) > 0 {
		t.Fatalf("exhausted %v", ex)
	}
	if got, want := slotsOf(base["be"]), []string{"s1:10.0.0.1:80/s1", "s2:10.0.0.2:80/s2", "s3:-/", "s4:-/"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after reload: %v, want %v", got, want)
	}
	tests := []struct {
		name      string
		cfg       model.Config
		want      []string
		exhausted bool
	}{
		{"node down keeps the bound slot: the node's state is inherited",
			trackCfg([]model.Server{n1, nodeSrv("10.0.0.2", true)}, a, b),
			[]string{"s1:10.0.0.1:80/s1", "s2:10.0.0.2:80/s2", "s3:-/", "s4:-/"}, false},
		{"server of a new node that is down takes an unbound slot, in maintenance of its own",
			trackCfg([]model.Server{n1, n2, nodeSrv("10.0.0.3", true)}, a, b, c),
			[]string{"s1:10.0.0.1:80/s1", "s2:10.0.0.2:80/s2", "s3:10.0.0.3:80(maint)/", "s4:-/"}, false},
		{"server of a new node takes an unbound slot",
			trackCfg([]model.Server{n1, n2, n3}, a, b, c),
			[]string{"s1:10.0.0.1:80/s1", "s2:10.0.0.2:80/s2", "s3:10.0.0.3:80/", "s4:-/"}, false},
		{"a server leaving frees its slot, which keeps its binding",
			trackCfg([]model.Server{n1, n2}, a),
			[]string{"s1:10.0.0.1:80/s1", "s2:-/s2", "s3:-/", "s4:-/"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next, ex := Assign(tc.cfg, base, false)
			if (len(ex) > 0) != tc.exhausted {
				t.Fatalf("exhausted = %v, want %v", ex, tc.exhausted)
			}
			if got := slotsOf(next["be"]); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("slots %v, want %v", got, tc.want)
			}
		})
	}

	// A free slot bound to node 2 takes only node 2's servers: another
	// port of node 2 returns to it, a server of node 3 does not.
	freed, _ := Assign(trackCfg([]model.Server{n1, n2}, a), base, false)
	b2 := srv("10.0.0.2", 81)
	next, _ := Assign(trackCfg([]model.Server{n1, n2, n3}, a, c, b2), freed, false)
	if got, want := slotsOf(next["be"]), []string{"s1:10.0.0.1:80/s1", "s2:10.0.0.2:81/s2", "s3:10.0.0.3:80/", "s4:-/"}; !reflect.DeepEqual(got, want) {
		t.Errorf("reuse: %v, want %v", got, want)
	}
	// With no unbound slot left, a server of a new node does not fit,
	// though a slot bound to another node is free: a reload binds it.
	c81 := srv("10.0.0.3", 81)
	full, _ := Assign(trackCfg([]model.Server{n1, n2, n3}, a, c, c81), next, false)
	if got, want := slotsOf(full["be"]), []string{"s1:10.0.0.1:80/s1", "s2:-/s2", "s3:10.0.0.3:80/", "s4:10.0.0.3:81/"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("full: %v, want %v", got, want)
	}
	d := srv("10.0.0.4", 80)
	n4 := nodeSrv("10.0.0.4", false)
	if _, ex := Assign(trackCfg([]model.Server{n1, n2, n3, n4}, a, c, c81, d), full, false); len(ex) != 1 || ex[0] != "be" {
		t.Errorf("exhausted = %v, want [be]", ex)
	}
	grown, ex := Assign(trackCfg([]model.Server{n1, n2, n3, n4}, a, c, c81, d), full, true)
	if len(ex) > 0 {
		t.Fatalf("exhausted on resize: %v", ex)
	}
	if got, want := slotsOf(grown["be"]), []string{"s1:10.0.0.1:80/s1", "s2:10.0.0.4:80/s4", "s3:10.0.0.3:80/s3", "s4:10.0.0.3:81/s3", "s5:-/", "s6:-/", "s7:-/", "s8:-/"}; !reflect.DeepEqual(got, want) {
		t.Errorf("resize: %v, want %v", got, want)
	}
}

// A node slot given to another node (the first was deleted) must not let
// the first node's old address return to a slot that now follows the
// other node.
func TestAssignNodeSlotReused(t *testing.T) {
	n1, n2 := nodeSrv("10.0.0.1", false), nodeSrv("10.0.0.2", false)
	a, b := srv("10.0.0.1", 80), srv("10.0.0.2", 80)
	base, _ := Assign(trackCfg([]model.Server{n1, n2}, a, b), nil, true)
	// Node 2 is deleted; three new nodes take every free node slot, s2
	// included.
	n3, n4, n5 := nodeSrv("10.0.0.3", false), nodeSrv("10.0.0.4", false), nodeSrv("10.0.0.5", false)
	gone, _ := Assign(trackCfg([]model.Server{n1, n3, n4, n5}, a), base, false)
	if got := gone[model.NodesBackend][1]; !got.Used || got.Server.Addr == n2.Addr {
		t.Fatalf("node slot s2 = %+v, want it taken by another node", got)
	}
	// Node 5 goes, node 2 comes back with its old address: its server
	// must not return to be/s2, which follows _nodes/s2 (now another
	// node's).
	back, ex := Assign(trackCfg([]model.Server{n1, n2, n3, n4}, a, b), gone, false)
	if len(ex) > 0 {
		t.Fatalf("exhausted: %v", ex)
	}
	for i, sl := range back["be"] {
		if sl.Used && sl.Server.Addr == b.Addr && sl.Track != 0 {
			if ns := newBinder(back[model.NodesBackend]).slotOf(b); sl.Track != ns {
				t.Errorf("%s holds node 2's server but follows _nodes slot %d (node 2 is %d)", model.SlotName(i), sl.Track, ns)
			}
		}
	}
}

func TestOpsFollowNodes(t *testing.T) {
	n1, n2 := nodeSrv("10.0.0.1", false), nodeSrv("10.0.0.2", false)
	a, b, c := srv("10.0.0.1", 80), srv("10.0.0.2", 80), srv("10.0.0.3", 80)
	n3 := nodeSrv("10.0.0.3", false)
	base, _ := Assign(trackCfg([]model.Server{n1, n2}, a, b), nil, true)
	joined, _ := Assign(trackCfg([]model.Server{n1, n2, n3}, a, b, c), base, false)
	rt := Runtime{} // as rendered: every slot in maintenance
	for be, slots := range joined {
		for range slots {
			rt[be] = append(rt[be], Actual{Maint: true})
		}
	}
	all, _ := Ops(joined, rt)
	rt.Apply(all)
	if ops, _ := Ops(joined, rt); len(ops) != 0 {
		t.Fatalf("ops after applying: %v", ops)
	}

	// Nodes 2 and 3 go down: node 2's server follows _nodes/s2, so only
	// the node slots and node 3's server (in a slot that follows no node)
	// change. The backend's servers are the same: the desired package
	// does not touch backends that follow their nodes when a node's state
	// changes.
	down, _ := Assign(trackCfg([]model.Server{n1, nodeSrv("10.0.0.2", true), nodeSrv("10.0.0.3", true)}, a, b, c), joined, false)
	ops, _ := Ops(down, rt)
	var got []string
	for _, o := range ops {
		got = append(got, o.Backend+"/"+o.Slot+" "+o.Kind.String())
	}
	want := []string{"_nodes/s2 maint", "_nodes/s3 maint", "be/s3 maint"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ops %v, want %v", got, want)
	}
	rt.Apply(ops)
	up, _ := Assign(trackCfg([]model.Server{n1, n2, n3}, a, b, c), down, false)
	ops, _ = Ops(up, rt)
	got = got[:0]
	for _, o := range ops {
		got = append(got, o.Backend+"/"+o.Slot+" "+o.Kind.String())
	}
	if want := []string{"_nodes/s2 ready", "_nodes/s3 ready", "be/s3 ready"}; !reflect.DeepEqual(got, want) {
		t.Errorf("back up: ops %v, want %v", got, want)
	}
}

// AssignChanged gives the slots AssignFrom gives when the node backend
// and a following backend change together.
func TestAssignChangedFollowsNodes(t *testing.T) {
	n1, n2, n3 := nodeSrv("10.0.0.1", false), nodeSrv("10.0.0.2", false), nodeSrv("10.0.0.3", false)
	a, b, c := srv("10.0.0.1", 80), srv("10.0.0.2", 80), srv("10.0.0.3", 80)
	prevCfg := trackCfg([]model.Server{n1, n2}, a, b)
	prev, _ := Assign(prevCfg, nil, true)
	next := trackCfg([]model.Server{n1, n2, n3}, a, b, c)
	next.Changes = &model.Changes{Base: prevCfg.Backends, Backends: []int{0, 1}}
	next.Backends = append([]*model.Backend(nil), next.Backends...)
	prevCfg.Backends = next.Changes.Base
	changed, ok := AssignChanged(next, prevCfg, prev, LooseOf(prevCfg, prev))
	if !ok {
		t.Fatal("AssignChanged refused")
	}
	want, _ := AssignFrom(next, prevCfg, prev, false)
	for _, be := range []string{model.NodesBackend, "be"} {
		if !reflect.DeepEqual(changed[be], want[be]) {
			t.Errorf("%s: %v, want %v", be, slotsOf(changed[be]), slotsOf(want[be]))
		}
	}
}

// A held free slot of the NodesBackend takes back the node it remembers,
// never another node, until a reload (resize) drops the hold.
func TestAssignHeldNodeSlot(t *testing.T) {
	n1, n2, n3 := nodeSrv("10.0.0.1", false), nodeSrv("10.0.0.2", false), nodeSrv("10.0.0.3", false)
	base, _ := Assign(trackCfg([]model.Server{n1, n2}), nil, true)
	// n1 deleted: its slot s1 is free, remembers n1, and is held.
	gone, _ := Assign(trackCfg([]model.Server{n2}), base, false)
	nodes := gone[model.NodesBackend]
	if nodes[0].Used {
		t.Fatalf("s1 still used: %v", slotsOf(nodes))
	}
	nodes[0].Held = true
	for _, tc := range []struct {
		name   string
		nodes  []model.Server
		resize bool
		want   []string
		held   bool
	}{
		{"another node joins", []model.Server{n2, n3}, false, []string{"s1:-/", "s2:10.0.0.2:0/", "s3:10.0.0.3:0/", "s4:-/"}, true},
		{"the node returns", []model.Server{n1, n2}, false, []string{"s1:10.0.0.1:0/", "s2:10.0.0.2:0/", "s3:-/", "s4:-/"}, false},
		{"another node joins at a reload", []model.Server{n2, n3}, true, []string{"s1:10.0.0.3:0/", "s2:10.0.0.2:0/", "s3:-/", "s4:-/"}, false},
		{"nothing changes", []model.Server{n2}, false, []string{"s1:-/", "s2:10.0.0.2:0/", "s3:-/", "s4:-/"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ex := Assign(trackCfg(tc.nodes), model.Layout{model.NodesBackend: nodes}, tc.resize)
			if len(ex) > 0 {
				t.Fatalf("exhausted %v", ex)
			}
			if s := slotsOf(got[model.NodesBackend]); !reflect.DeepEqual(s, tc.want) {
				t.Errorf("slots %v, want %v", s, tc.want)
			}
			if h := got[model.NodesBackend][0].Held; h != tc.held {
				t.Errorf("s1 held %v, want %v", h, tc.held)
			}
		})
	}
	// Only a held slot free: a new node does not fit without a reload.
	full := []model.Slot{nodes[0], {Used: true, Server: n2}}
	if _, ex := Assign(trackCfg([]model.Server{n2, n3}), model.Layout{model.NodesBackend: full}, false); len(ex) != 1 {
		t.Errorf("exhausted %v, want the NodesBackend", ex)
	}
}
