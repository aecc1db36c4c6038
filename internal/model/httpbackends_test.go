package model

import (
	"slices"
	"strings"
	"testing"
)

func TestHTTPBackends(t *testing.T) {
	wb := func(names ...string) []WeightedBackend {
		var out []WeightedBackend
		for _, n := range names {
			out = append(out, WeightedBackend{Name: n, Weight: 1})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		h       *HTTP
		names   []string
		renamed []string // each action's backends after WithBackends(upper), joined by ","
	}{
		{"nil", nil, nil, nil},
		{"none", &HTTP{Actions: []HTTPAction{{Redirect: &Redirect{Code: 301}}}}, nil, []string{""}},
		{"shared and repeated", &HTTP{Actions: []HTTPAction{{Backends: wb("a", "b")}, {Redirect: &Redirect{Code: 302}}, {Backends: wb("b", RejectBackend, "c")}}},
			[]string{"a", "b", RejectBackend, "c"}, []string{"A,B", "", "B,_REJECT,C"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.h.BackendNames(); !slices.Equal(got, tc.names) {
				t.Errorf("BackendNames = %v, want %v", got, tc.names)
			}
			before := tc.h.BackendNames()
			r := tc.h.WithBackends(strings.ToUpper)
			if tc.h == nil {
				if r != nil {
					t.Errorf("WithBackends of nil = %v", r)
				}
				return
			}
			var got []string
			for _, a := range r.Actions {
				var ns []string
				for _, b := range a.Backends {
					ns = append(ns, b.Name)
				}
				got = append(got, strings.Join(ns, ","))
			}
			if !slices.Equal(got, tc.renamed) {
				t.Errorf("WithBackends: %v, want %v", got, tc.renamed)
			}
			if after := tc.h.BackendNames(); !slices.Equal(after, before) {
				t.Errorf("WithBackends changed the table it read: %v, was %v", after, before)
			}
			if len(r.Actions) != len(tc.h.Actions) || (len(r.Actions) > 1 && r.Actions[1].Redirect != tc.h.Actions[1].Redirect) {
				t.Errorf("WithBackends lost an action: %+v", r.Actions)
			}
		})
	}
}
