package plan

import (
	"reflect"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func TestSlotIndex(t *testing.T) {
	for _, tc := range []struct {
		name string
		i    int
		ok   bool
	}{
		{"s1", 0, true}, {"s9", 8, true}, {"s10", 9, true}, {"s123", 122, true},
		{"s0", 0, false}, {"s01", 0, false}, {"s", 0, false}, {"", 0, false},
		{"x1", 0, false}, {"s1a", 0, false}, {"s-1", 0, false}, {"s12345678901", 0, false},
	} {
		i, ok := SlotIndex(tc.name)
		if i != tc.i || ok != tc.ok {
			t.Errorf("SlotIndex(%q) = %d, %v; want %d, %v", tc.name, i, ok, tc.i, tc.ok)
		}
		if ok {
			if got := model.SlotName(i); got != tc.name {
				t.Errorf("SlotName(%d) = %q, want %q", i, got, tc.name)
			}
		}
	}
}

func TestRuntimeBuilder(t *testing.T) {
	a, b := Actual{Server: srv("10.0.0.1", 80)}, Actual{Maint: true}
	type row struct {
		be, srv string
		a       Actual
	}
	tests := []struct {
		name    string
		rows    []row
		want    Runtime
		foreign []string
	}{
		{"empty", nil, Runtime{}, nil},
		{"in order", []row{{"x", "s1", a}, {"x", "s2", b}, {"y", "s1", b}},
			Runtime{"x": {a, b}, "y": {b}}, nil},
		{"a backend that comes back continues", []row{{"x", "s1", a}, {"y", "s1", b}, {"x", "s2", b}},
			Runtime{"x": {a, b}, "y": {b}}, nil},
		{"gap", []row{{"x", "s1", a}, {"x", "s3", b}, {"x", "s4", b}, {"y", "s1", a}},
			Runtime{"y": {a}}, []string{"x"}},
		{"out of order", []row{{"x", "s2", a}, {"x", "s1", a}}, Runtime{}, []string{"x"}},
		{"foreign name", []row{{"y", "s1", a}, {"x", "s1", a}, {"x", "web", a}, {"x", "s2", a}},
			Runtime{"y": {a}}, []string{"x"}},
		{"repeated name", []row{{"x", "s1", a}, {"x", "s1", b}}, Runtime{}, []string{"x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rb RuntimeBuilder
			for _, r := range tc.rows {
				rb.Add(r.be, r.srv, r.a)
			}
			rt, foreign := rb.Finish()
			if !reflect.DeepEqual(rt, tc.want) || !reflect.DeepEqual(foreign, tc.foreign) {
				t.Fatalf("got %+v foreign %v, want %+v foreign %v", rt, foreign, tc.want, tc.foreign)
			}
			for be, s := range rt {
				if cap(s) != len(s) {
					t.Errorf("%s: cap %d > len %d", be, cap(s), len(s))
				}
			}
		})
	}
}

func TestRuntimeLayout(t *testing.T) {
	a := srv("10.0.0.1", 80)
	rt := Runtime{"be": {{Server: a}, {Server: srv("127.0.0.1", 1), Maint: true}}}
	want := model.Layout{"be": {{Used: true, Server: a}, {Server: srv("127.0.0.1", 1)}}}
	if got := rt.Layout(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Layout = %+v, want %+v", got, want)
	}
	if ops, missing := Ops(want, rt); len(ops) != 0 || len(missing) != 0 {
		t.Fatalf("a layout read back needs ops %v, missing %v", ops, missing)
	}
}
