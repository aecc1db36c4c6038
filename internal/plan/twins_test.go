package plan

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func TestTwinIndex(t *testing.T) {
	for _, tc := range []struct {
		name string
		i    int
		ok   bool
	}{
		{"r1", 0, true}, {"r12", 11, true}, {TwinName(41), 41, true},
		{"r0", 0, false}, {"r01", 0, false}, {"r", 0, false}, {"s1", 0, false}, {"rx", 0, false},
	} {
		if i, ok := TwinIndex(tc.name); i != tc.i || ok != tc.ok {
			t.Errorf("TwinIndex(%q) = %d, %v; want %d, %v", tc.name, i, ok, tc.i, tc.ok)
		}
	}
}

// TestSettle: the phases that end a renewal cut short, from the slots and
// twins HAProxy reports, and the slots ending as the twins served.
func TestSettle(t *testing.T) {
	a := model.Server{Addr: netip.MustParseAddr("10.0.0.1"), Port: 80}
	b := model.Server{Addr: netip.MustParseAddr("10.0.0.2"), Port: 80, Drain: true}
	free := model.Server{Addr: netip.MustParseAddr("10.0.0.9"), Port: 80}
	for _, tc := range []struct {
		name    string
		slots   []Actual
		twins   map[int]Actual
		checked bool
		want    []string
		end     []Actual
	}{
		{name: "no twin", slots: []Actual{{Server: a}}},
		{name: "twins beside the slots in service (first phase, or slots created again)",
			slots: []Actual{{Server: a}, {Server: b}, {Server: free, Maint: true}},
			twins: map[int]Actual{0: {Server: a}, 1: {Server: b}},
			want:  []string{"", "maint r1, maint r2", "delete r1, delete r2"},
			end:   []Actual{{Server: a}, {Server: b}, {Server: free, Maint: true}}},
		{name: "checked: the slots serving waited for, as they may be created again",
			slots: []Actual{{Server: a}}, twins: map[int]Actual{0: {Server: a}}, checked: true,
			want: []string{" | s1", "maint r1", "delete r1"},
			end:  []Actual{{Server: a}}},
		{name: "slots in maintenance, twins serving (second phase): the slots serve again",
			slots: []Actual{{Server: a, Maint: true}, {Server: b, Maint: true}},
			twins: map[int]Actual{0: {Server: a}, 1: {Server: b}}, checked: true,
			want: []string{"drain s1, down s1, ready s1, drain s2, down s2 | s1 s2", "maint r1, maint r2", "delete r1, delete r2"},
			end:  []Actual{{Server: a}, {Server: b}}},
		{name: "a slot at another address than its twin",
			slots: []Actual{{Server: free}},
			twins: map[int]Actual{0: {Server: a}},
			want:  []string{"maint s1, addr s1 10.0.0.1:80, ready s1", "maint r1", "delete r1"},
			end:   []Actual{{Server: a}}},
		{name: "twins in maintenance (fifth phase): deleted",
			slots: []Actual{{Server: a}},
			twins: map[int]Actual{0: {Server: a, Maint: true}},
			want:  []string{"", "", "delete r1"},
			end:   []Actual{{Server: a}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			phases := Settle("be", tc.slots, tc.twins, tc.checked)
			if got := phaseLines(t, phases); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("phases:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			rt := Runtime{"be": append([]Actual(nil), tc.slots...)}
			for _, ph := range phases {
				rt.Apply(ph.Ops)
			}
			if tc.end != nil && fmt.Sprint(rt["be"]) != fmt.Sprint(tc.end) {
				t.Errorf("slots after %v, want %v", rt["be"], tc.end)
			}
		})
	}
}

// TestRuntimeBuilderTwins: a renewal's twins, listed after the slots or
// before them, leave the slots in order and are reported apart; slots
// missing around them make the backend foreign, its twins not reported.
func TestRuntimeBuilderTwins(t *testing.T) {
	a := Actual{Server: model.Server{Addr: netip.MustParseAddr("10.0.0.1"), Port: 80}}
	var b RuntimeBuilder
	for _, row := range []struct{ be, srv string }{
		{"after", "s1"}, {"after", "s2"}, {"after", "r1"},
		{"before", "r1"}, {"before", "r2"}, {"before", "s1"}, {"before", "s2"},
		{"gap", "s2"}, {"gap", "r1"},
		{"plain", "s1"},
	} {
		b.Add(row.be, row.srv, a)
	}
	rt, foreign := b.Finish()
	twins := b.Twins()
	if len(rt["after"]) != 2 || len(rt["before"]) != 2 || len(rt["plain"]) != 1 {
		t.Errorf("slots %v", rt)
	}
	if fmt.Sprint(foreign) != "[gap]" {
		t.Errorf("foreign %v, want [gap]", foreign)
	}
	if len(twins) != 2 || len(twins["after"]) != 1 || len(twins["before"]) != 2 {
		t.Errorf("twins %v", twins)
	}
}
