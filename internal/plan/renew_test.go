package plan

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// TestRenew: the phases of a renewal, each written as its operations
// ("kind slot", Create with its address) and, after "|", the servers
// whose check must pass before the next phase.
func TestRenew(t *testing.T) {
	a := model.Server{Addr: netip.MustParseAddr("10.0.0.1"), Port: 80}
	b := model.Server{Addr: netip.MustParseAddr("10.0.0.2"), Port: 80, Drain: true}
	free := model.Server{Addr: netip.MustParseAddr("10.0.0.9"), Port: 80}
	for _, tc := range []struct {
		name    string
		states  []Actual
		checked bool
		want    []string
	}{
		{name: "no slot"},
		{name: "only free slots: deleted and created again, no twin",
			states: []Actual{{Server: free, Maint: true}, {Maint: true}},
			want: []string{
				"delete s1, delete s2",
				"create s1 10.0.0.9:80, create s2 invalid AddrPort",
			}},
		{name: "one in service, one draining, one free",
			states: []Actual{{Server: a}, {Server: b}, {Server: free, Maint: true}},
			want: []string{
				"create r1 10.0.0.1:80, ready r1, create r2 10.0.0.2:80, drain r2",
				"maint s1, maint s2",
				"delete s1, delete s2, delete s3",
				"create s1 10.0.0.1:80, ready s1, create s2 10.0.0.2:80, drain s2, create s3 10.0.0.9:80",
				"maint r1, maint r2",
				"delete r1, delete r2",
			}},
		{name: "checked: held until the check passes, and waited for",
			states: []Actual{{Server: a}, {Server: b}}, checked: true,
			want: []string{
				"create r1 10.0.0.1:80, drain r1, down r1, ready r1, create r2 10.0.0.2:80, drain r2, down r2 | r1 r2",
				"maint s1, maint s2",
				"delete s1, delete s2",
				"create s1 10.0.0.1:80, drain s1, down s1, ready s1, create s2 10.0.0.2:80, drain s2, down s2 | s1 s2",
				"maint r1, maint r2",
				"delete r1, delete r2",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			phases := Renew("be", tc.states, tc.checked)
			got := phaseLines(t, phases)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("phases:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			// The slots end as they started.
			rt := Runtime{"be": append([]Actual(nil), tc.states...)}
			for _, ph := range phases {
				rt.Apply(ph.Ops)
			}
			if fmt.Sprint(rt["be"]) != fmt.Sprint(tc.states) {
				t.Errorf("states after the renewal %v, want %v", rt["be"], tc.states)
			}
		})
	}
}

// phaseLines writes each phase as its operations ("kind slot", Create
// and SetAddr with their address) and, after "|", the servers whose check
// must pass before the next phase.
func phaseLines(t *testing.T, phases []Phase) []string {
	t.Helper()
	var got []string
	for _, ph := range phases {
		var ops []string
		for _, o := range ph.Ops {
			if o.Backend != "be" {
				t.Errorf("op %v on backend %q", o, o.Backend)
			}
			s := o.Kind.String() + " " + o.Slot
			if o.Kind == Create || o.Kind == SetAddr {
				s += " " + netip.AddrPortFrom(o.Server.Addr, o.Server.Port).String()
			}
			ops = append(ops, s)
		}
		line := strings.Join(ops, ", ")
		if len(ph.Up) > 0 {
			line += " | " + strings.Join(ph.Up, " ")
		}
		got = append(got, line)
	}
	return got
}
