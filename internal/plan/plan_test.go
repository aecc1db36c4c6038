package plan

import (
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func srv(a string, port uint16) model.Server {
	return model.Server{Addr: netip.MustParseAddr(a), Port: port}
}

func cfgWith(servers ...model.Server) model.Config {
	return model.Config{Backends: []*model.Backend{{Name: "be", Balance: "roundrobin", Servers: servers}}}
}

func used(layout model.Layout) map[string]string {
	out := map[string]string{}
	for i, s := range layout["be"] {
		if s.Used {
			out[model.SlotName(i)] = s.Server.Key().String()
		}
	}
	return out
}

func TestSlotsFor(t *testing.T) {
	for _, tc := range []struct{ n, want int }{{0, 4}, {1, 4}, {2, 4}, {3, 8}, {5, 8}, {6, 8}, {7, 12}, {20, 28}, {100, 128}} {
		if got := SlotsFor(tc.n); got != tc.want {
			t.Errorf("SlotsFor(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestAssign(t *testing.T) {
	a, b, c, d := srv("10.0.0.1", 80), srv("10.0.0.2", 80), srv("10.0.0.3", 80), srv("10.0.0.4", 80)
	prev, _ := Assign(cfgWith(a, b, c), nil, false)
	tests := []struct {
		name      string
		servers   []model.Server
		resize    bool
		want      map[string]string
		size      int
		exhausted bool
	}{
		{"unchanged", []model.Server{a, b, c}, false, map[string]string{"s1": "10.0.0.1:80", "s2": "10.0.0.2:80", "s3": "10.0.0.3:80"}, 8, false},
		{"removed keeps others in place", []model.Server{a, c}, false, map[string]string{"s1": "10.0.0.1:80", "s3": "10.0.0.3:80"}, 8, false},
		{"added takes a free slot", []model.Server{b, d}, false, map[string]string{"s2": "10.0.0.2:80", "s1": "10.0.0.4:80"}, 8, false},
		{"shrink on resize stops at the last used slot", []model.Server{c}, true, map[string]string{"s3": "10.0.0.3:80"}, 4, false},
		{"shrink to headroom", []model.Server{a}, true, map[string]string{"s1": "10.0.0.1:80"}, 4, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next, ex := Assign(cfgWith(tc.servers...), prev, tc.resize)
			if got := used(next); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("slots = %v, want %v", got, tc.want)
			}
			if len(next["be"]) != tc.size {
				t.Errorf("size = %d, want %d", len(next["be"]), tc.size)
			}
			if (len(ex) > 0) != tc.exhausted {
				t.Errorf("exhausted = %v", ex)
			}
		})
	}
}

func TestAssignExhaustion(t *testing.T) {
	var many []model.Server
	for i := 1; i <= 9; i++ {
		many = append(many, srv("10.0.0."+string(rune('0'+i)), 80))
	}
	prev, _ := Assign(cfgWith(many[:2]...), nil, false) // 4 slots
	if _, ex := Assign(cfgWith(many...), prev, false); !reflect.DeepEqual(ex, []string{"be"}) {
		t.Fatalf("exhausted = %v, want [be]", ex)
	}
	next, ex := Assign(cfgWith(many...), prev, true)
	if len(ex) != 0 || len(next["be"]) != SlotsFor(9) || len(used(next)) != 9 {
		t.Fatalf("resize: exhausted %v, %d slots, %d used", ex, len(next["be"]), len(used(next)))
	}
	if used(next)["s1"] != used(prev)["s1"] || used(next)["s2"] != used(prev)["s2"] {
		t.Errorf("existing servers moved: %v vs %v", used(next), used(prev))
	}
}

func TestOps(t *testing.T) {
	a, b := srv("10.0.0.1", 80), srv("10.0.0.2", 81)
	drain := b
	drain.Drain = true
	layout := model.Layout{"be": {
		{Used: true, Server: a},
		{Used: true, Server: drain},
		{},
		{Used: true, Server: b},
	}}
	rt := Runtime{"be": {
		{Server: a}, // s1 in place: nothing
		{Server: b}, // s2 ready → drain
		{Server: a}, // s3 serving a removed server → maint
		{Server: srv("127.0.0.1", 1), Maint: true}, // s4 free slot takes b
	}}
	ops, missing := Ops(layout, rt)
	want := []Op{
		{Kind: Drain, Backend: "be", Slot: "s2", Server: drain},
		{Kind: Maint, Backend: "be", Slot: "s3"},
		{Kind: SetAddr, Backend: "be", Slot: "s4", Server: b},
		{Kind: Ready, Backend: "be", Slot: "s4", Server: b},
	}
	if !reflect.DeepEqual(ops, want) || len(missing) != 0 {
		t.Fatalf("ops = %+v missing %v\nwant %+v", ops, missing, want)
	}
	rt.Apply(ops)
	if again, _ := Ops(layout, rt); len(again) != 0 {
		t.Fatalf("after Apply, ops = %+v, want none", again)
	}
	rt["be"] = rt["be"][:3]
	if _, missing := Ops(layout, rt); !reflect.DeepEqual(missing, []string{"be/s4"}) {
		t.Fatalf("missing = %v", missing)
	}
}

// Slots are found by index: a layout slot that is not named after its
// index, or beyond the states HAProxy reported, is missing.
func TestOpsMissing(t *testing.T) {
	a := srv("10.0.0.1", 80)
	rt := Runtime{"be": {{Server: a}, {Maint: true}}, "other": {{Server: a}}}
	tests := []struct {
		name   string
		layout model.Layout
		want   []string
	}{
		{"all present", model.Layout{"be": {{Used: true, Server: a}, {}}}, nil},
		{"beyond the states", model.Layout{"be": {{Used: true, Server: a}, {}, {}}}, []string{"be/s3"}},
		{"unknown backend", model.Layout{"new": {{}}, "other": {{Used: true, Server: a}}}, []string{"new/s1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ops, missing := Ops(tc.layout, rt)
			if !reflect.DeepEqual(missing, tc.want) || len(ops) != 0 {
				t.Fatalf("ops %+v missing %v, want no ops and missing %v", ops, missing, tc.want)
			}
		})
	}
}

func TestRuntimeApplyExtends(t *testing.T) {
	a := srv("10.0.0.1", 80)
	rt := Runtime{}
	rt.Apply([]Op{{Kind: SetAddr, Backend: "be", Slot: "s3", Server: a}, {Kind: Ready, Backend: "be", Slot: "s3"}, {Kind: Maint, Backend: "be", Slot: "bogus"}})
	want := Runtime{"be": {{}, {}, {Server: a}}}
	if !reflect.DeepEqual(rt, want) {
		t.Fatalf("rt = %+v, want %+v", rt, want)
	}
}

func TestReasons(t *testing.T) {
	old := model.Config{
		Frontends: []model.Frontend{{Name: "fe_a", Backend: "be_a"}, {Name: "fe_b", Backend: "be_b"}},
		Backends:  []*model.Backend{{Name: "be_a", Balance: "roundrobin"}, {Name: "be_b", Balance: "roundrobin"}},
	}
	next := model.Config{
		Frontends: []model.Frontend{{Name: "fe_a", Backend: "be_a"}, {Name: "fe_c", Backend: "be_c"}},
		Backends: []*model.Backend{
			{Name: "be_a", Balance: "leastconn", Servers: []model.Server{srv("10.0.0.1", 1)}},
			{Name: "be_c", Balance: "roundrobin"},
		},
	}
	want := []string{"backend added be_c", "backend changed be_a", "backend removed be_b", "frontend added fe_c", "frontend removed fe_b"}
	if got := Reasons(old, next); !reflect.DeepEqual(got, want) {
		t.Fatalf("Reasons = %v\nwant %v", got, want)
	}
	// Servers alone are not a structural reason.
	if got := Reasons(next, cfgServers(next)); len(got) != 0 {
		t.Fatalf("server-only change gave reasons %v", got)
	}
}

func cfgServers(c model.Config) model.Config {
	out := c
	out.Backends = append([]*model.Backend(nil), c.Backends...)
	out.Backends[0] = out.Backends[0].WithServers([]model.Server{srv("10.9.9.9", 9)})
	return out
}

// The shortcut for unchanged backends gives what the general case gives.
func TestAssignShortcutMatchesGeneralCase(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pool := []model.Server{srv("10.0.0.1", 80), srv("10.0.0.2", 80), srv("10.0.0.3", 80), srv("10.0.0.3", 81), srv("10.0.0.4", 80)}
	pick := func() []model.Server {
		var out []model.Server
		for _, s := range pool {
			if rng.IntN(2) == 0 {
				s.Drain = rng.IntN(4) == 0
				out = append(out, s)
			}
		}
		return out
	}
	shortcuts := 0
	for range 5000 {
		prev, _ := Assign(cfgWith(pick()...), nil, false)
		old := prev["be"]
		if rng.IntN(3) == 0 { // sometimes the desired servers of the same pass
			var same []model.Server
			for _, sl := range old {
				if sl.Used {
					same = append(same, sl.Server)
				}
			}
			slices.SortFunc(same, func(a, b model.Server) int { return a.Key().Compare(b.Key()) })
			if rng.IntN(2) == 0 && len(same) > 1 {
				same[0], same[1] = same[1], same[0]
			}
			if rng.IntN(4) == 0 && len(same) > 0 {
				same = append(same, same[0])
			}
			old[0].Server = model.Server{}
			if rng.IntN(2) == 0 && !old[0].Used {
				old[0].Server = srv("10.9.9.9", 9)
			}
			next := same
			if unchanged(next, old, binder{}) {
				shortcuts++
			}
			want, wok := assignSlots(next, old, len(old), false, binder{})
			got, gok := assignBackend(next, old, len(old), false, binder{})
			if !reflect.DeepEqual(got, want) || gok != wok {
				t.Fatalf("servers %v old %v: shortcut %v %v, general %v %v", next, old, got, gok, want, wok)
			}
			continue
		}
		next := pick()
		want, wok := assignSlots(next, old, len(old), false, binder{})
		got, gok := assignBackend(next, old, len(old), false, binder{})
		if !reflect.DeepEqual(got, want) || gok != wok {
			t.Fatalf("servers %v old %v: shortcut %v %v, general %v %v", next, old, got, gok, want, wok)
		}
	}
	if shortcuts == 0 {
		t.Fatal("the shortcut was never taken")
	}
}

// AssignFrom gives what Assign gives, when servers slices are shared
// between passes as the desired package's Memo shares them.
func TestAssignFromMatchesAssign(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pool := []model.Server{srv("10.0.0.1", 80), srv("10.0.0.2", 80), srv("10.0.0.3", 80), srv("10.0.0.4", 80), srv("10.0.0.5", 80),
		srv("10.0.0.6", 80), srv("10.0.0.7", 80), srv("10.0.0.8", 80), srv("10.0.0.9", 80)}
	pick := func() []model.Server {
		var out []model.Server
		for _, s := range pool {
			if rng.IntN(3) == 0 {
				out = append(out, s)
			}
		}
		return out
	}
	names := []string{"a", "b", "c"}
	var prevCfg model.Config
	for _, n := range names {
		prevCfg.Backends = append(prevCfg.Backends, &model.Backend{Name: n, Servers: pick()})
	}
	prev, _ := Assign(prevCfg, nil, false)
	for range 2000 {
		var cfg model.Config
		for i, n := range names {
			servers := prevCfg.Backends[i].Servers // the same slice
			if rng.IntN(3) == 0 {
				servers = pick()
			}
			if n == "c" && rng.IntN(4) == 0 {
				n = "d" // another backend set of the same size
			}
			cfg.Backends = append(cfg.Backends, &model.Backend{Name: n, Servers: servers})
		}
		want, wex := Assign(cfg, prev, false)
		got, gex := AssignFrom(cfg, prevCfg, prev, false)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gex, wex) {
			t.Fatalf("AssignFrom %v %v, Assign %v %v", got, gex, want, wex)
		}
		if len(wex) > 0 {
			want, _ = Assign(cfg, prev, true) // what a reload does
		}
		prevCfg, prev = cfg, want
	}
}

// A server that goes away and comes back returns to the slot it had, which
// HAProxy keeps pointing at it in maintenance: only its state changes.
func TestAssignReturningServerKeepsItsSlot(t *testing.T) {
	a, b, c, d := srv("10.0.0.1", 80), srv("10.0.0.2", 80), srv("10.0.0.3", 80), srv("10.0.0.4", 80)
	l1, _ := Assign(cfgWith(a, b, c), nil, false)
	rt := Runtime{"be": make([]Actual, len(l1["be"]))}
	for i := range rt["be"] {
		rt["be"][i] = Actual{Maint: true} // as rendered: free slots disabled
	}
	ops, _ := Ops(l1, rt)
	rt.Apply(ops)
	l2, _ := Assign(cfgWith(b, c), l1, false) // a leaves s1
	ops2, _ := Ops(l2, rt)
	rt.Apply(ops2)
	l3, _ := Assign(cfgWith(b), l2, false) // c leaves s3
	ops3, _ := Ops(l3, rt)
	rt.Apply(ops3)
	l4, _ := Assign(cfgWith(b, c, d), l3, false) // c returns, d is new
	if got, want := used(l4), map[string]string{"s1": "10.0.0.4:80", "s2": "10.0.0.2:80", "s3": "10.0.0.3:80"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("slots = %v, want %v", got, want)
	}
	ops4, _ := Ops(l4, rt)
	want := []Op{
		{Kind: SetAddr, Backend: "be", Slot: "s1", Server: d},
		{Kind: Ready, Backend: "be", Slot: "s1", Server: d},
		{Kind: Ready, Backend: "be", Slot: "s3", Server: c},
	}
	if !reflect.DeepEqual(ops4, want) {
		t.Fatalf("ops = %+v, want %+v", ops4, want)
	}
	if next, _ := Assign(cfgWith(b, c, d), l4, false); !reflect.DeepEqual(next, l4) {
		t.Fatalf("a second pass moved servers: %v vs %v", next, l4)
	}
}
