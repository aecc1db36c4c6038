package plan

import (
	"reflect"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A free slot the config file left out (Actual.Absent) is created only
// when a server goes into it, in slot order with the absent slots before
// it, and first among its operations; a free one that stays free is not
// created.
func TestOpsCreateAbsentSlots(t *testing.T) {
	a, b := srv("10.0.0.1", 80), srv("10.0.0.2", 81)
	am := a
	am.Maint = true
	free := srv("127.0.0.1", 1)
	create := func(slot string) Op { return Op{Kind: Create, Backend: "be", Slot: slot, Server: free} }
	tests := []struct {
		name   string
		layout []model.Slot
		rt     []Actual
		want   []Op
	}{
		{
			name:   "free and absent: nothing",
			layout: []model.Slot{{Used: true, Server: a}, {}, {}},
			rt:     []Actual{{Server: a}, {Maint: true, Absent: true}, {Maint: true, Absent: true}},
		},
		{
			name:   "the first absent slot takes a server",
			layout: []model.Slot{{Used: true, Server: a}, {Used: true, Server: b}, {}},
			rt:     []Actual{{Server: a}, {Maint: true, Absent: true}, {Maint: true, Absent: true}},
			want: []Op{create("s2"),
				{Kind: SetAddr, Backend: "be", Slot: "s2", Server: b}, {Kind: Ready, Backend: "be", Slot: "s2", Server: b}},
		},
		{
			name:   "a later one: the free ones before it created first, in order",
			layout: []model.Slot{{}, {}, {Used: true, Server: b}},
			rt:     []Actual{{Maint: true, Absent: true}, {Maint: true, Absent: true}, {Maint: true, Absent: true}},
			want: []Op{create("s1"), create("s2"), create("s3"),
				{Kind: SetAddr, Backend: "be", Slot: "s3", Server: b}, {Kind: Ready, Backend: "be", Slot: "s3", Server: b}},
		},
		{
			name:   "a server put in maintenance there: created, pointed, left in maintenance",
			layout: []model.Slot{{Used: true, Server: am}},
			rt:     []Actual{{Maint: true, Absent: true}},
			want:   []Op{create("s1"), {Kind: SetAddr, Backend: "be", Slot: "s1", Server: am}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			layout := model.Layout{"be": tc.layout}
			rt := Runtime{"be": append([]Actual(nil), tc.rt...)}
			ops, missing := Ops(layout, rt)
			if !reflect.DeepEqual(ops, tc.want) || len(missing) != 0 {
				t.Fatalf("ops = %+v missing %v\nwant %+v", ops, missing, tc.want)
			}
			rt.Apply(ops)
			if again, _ := Ops(layout, rt); len(again) != 0 {
				t.Fatalf("after Apply, ops = %+v, want none", again)
			}
			if got := Present(rt["be"]); got < len(tc.rt)-countAbsent(tc.rt) {
				t.Fatalf("Present = %d after Apply", got)
			}
		})
	}
}

func countAbsent(s []Actual) int {
	n := 0
	for _, a := range s {
		if a.Absent {
			n++
		}
	}
	return n
}

// WithAbsent pads a backend's states to the layout's slots, and Present
// counts the states HAProxy has.
func TestWithAbsentAndPresent(t *testing.T) {
	rt := Runtime{"be": {{Server: srv("10.0.0.1", 80)}}}
	if n := rt.WithAbsent("be", 3); n != 2 {
		t.Fatalf("WithAbsent added %d, want 2", n)
	}
	if n := rt.WithAbsent("be", 2); n != 0 {
		t.Fatalf("WithAbsent of fewer slots added %d", n)
	}
	if c := cap(rt["be"]); c != 3 {
		t.Fatalf("WithAbsent left room for %d states, want 3: the padded states are kept for every spare", c)
	}
	if p := Present(rt["be"]); p != 1 || len(rt["be"]) != 3 || !rt["be"][2].Maint {
		t.Fatalf("Present %d of %+v", p, rt["be"])
	}
	if l := rt.Layout()["be"]; len(l) != 3 || l[1].Used || l[2].Used {
		t.Fatalf("the absent slots are free slots of the layout: %+v", l)
	}
}
