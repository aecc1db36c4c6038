package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestUntilChecked: in a checked backend a slot that comes into service
// (out of maintenance, at another address, or from drain to ready) goes
// through drain and a forced health down before ready; every other slot's
// operations, and every slot of a backend not checked, stay as Ops listed
// them.
func TestUntilChecked(t *testing.T) {
	a, b := srv("10.0.0.1", 80), srv("10.0.0.2", 80)
	drained := a
	drained.Drain = true
	maint := Actual{Server: a, Maint: true}
	rt := Runtime{
		"chk":   {maint, {Server: a}, {Server: drained}, maint, {Server: a}, {Server: a}},
		"plain": {maint},
	}
	op := func(k OpKind, be, slot string, s model.Server) Op {
		return Op{Kind: k, Backend: be, Slot: slot, Server: s}
	}
	for _, tc := range []struct {
		name string
		ops  []Op
		want string
	}{
		{"returning: out of maintenance", []Op{op(Ready, "chk", "s1", a)},
			"chk/s1 drain, chk/s1 down, chk/s1 ready"},
		{"new server in a free slot", []Op{op(SetAddr, "chk", "s4", b), op(Ready, "chk", "s4", b)},
			"chk/s4 addr 10.0.0.2:80, chk/s4 drain, chk/s4 down, chk/s4 ready"},
		{"new server in a used slot", []Op{op(SetAddr, "chk", "s2", b)},
			"chk/s2 addr 10.0.0.2:80, chk/s2 drain, chk/s2 down, chk/s2 ready"},
		{"drained back to ready", []Op{op(Ready, "chk", "s3", a)},
			"chk/s3 drain, chk/s3 down, chk/s3 ready"},
		{"out of maintenance into drain", []Op{op(Drain, "chk", "s4", a)},
			"chk/s4 drain, chk/s4 down"},
		{"ready to drain: stays", []Op{op(Drain, "chk", "s2", a)}, "chk/s2 drain"},
		{"leaving: stays", []Op{op(Maint, "chk", "s5", a), op(SetAddr, "chk", "s5", b)},
			"chk/s5 maint, chk/s5 addr 10.0.0.2:80"},
		{"not checked: stays", []Op{op(Ready, "plain", "s1", a)}, "plain/s1 ready"},
		{"a slot HAProxy does not report", []Op{op(SetAddr, "chk", "s9", b), op(Ready, "chk", "s9", b)},
			"chk/s9 addr 10.0.0.2:80, chk/s9 drain, chk/s9 down, chk/s9 ready"},
		{"several, order kept", []Op{op(Drain, "chk", "s2", a), op(Ready, "chk", "s4", a), op(Maint, "chk", "s6", a), op(Ready, "plain", "s1", a)},
			"chk/s2 drain, chk/s4 drain, chk/s4 down, chk/s4 ready, chk/s6 maint, plain/s1 ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.ops)
			got := UntilChecked(tc.ops, rt, func(be string) bool { return be == "chk" })
			if s := opsString(got); s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
			if !slices.Equal(in, tc.ops) {
				t.Errorf("ops changed in place: %v", tc.ops)
			}
			// Held or not, the slots end where Ops wanted them.
			r1, r2 := cloneRuntime(rt), cloneRuntime(rt)
			r1.Apply(tc.ops)
			r2.Apply(got)
			for be := range r1 {
				if !slices.Equal(r1[be], r2[be]) {
					t.Errorf("%s ends %v, want %v", be, r2[be], r1[be])
				}
			}
		})
	}
	// Nothing held: the very slice back (no allocation per pass).
	ops := []Op{op(Ready, "plain", "s1", a), op(Drain, "chk", "s2", a)}
	if got := UntilChecked(ops, rt, func(be string) bool { return be == "chk" }); &got[0] != &ops[0] {
		t.Error("a pass with nothing held got a copy")
	}
}

func opsString(ops []Op) string {
	var out []string
	for _, o := range ops {
		s := o.Backend + "/" + o.Slot + " " + o.Kind.String()
		if o.Kind == SetAddr {
			s += " " + o.Server.Key().String()
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

func cloneRuntime(rt Runtime) Runtime {
	out := make(Runtime, len(rt))
	for be, s := range rt {
		out[be] = slices.Clone(s)
	}
	return out
}
