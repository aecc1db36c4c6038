package model

import (
	"slices"
	"testing"
)

func TestFrontendsChangedFrom(t *testing.T) {
	base := []Frontend{{Name: "a"}, {Name: "c"}}
	now := []Frontend{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	said := &FrontendChanges{Base: base, Of: now, Names: []string{"b"}}
	for _, tc := range []struct {
		name string
		cfg  Config
		base []Frontend
		want []string
		ok   bool
	}{
		{"said", Config{Frontends: now, FrontChanges: said}, base, []string{"b"}, true},
		{"unknown (a whole pass)", Config{Frontends: now}, base, nil, false},
		{"from another base", Config{Frontends: now, FrontChanges: said}, slices.Clone(base), nil, false},
		{"other frontends (a stage changed them)", Config{Frontends: slices.Clone(now), FrontChanges: said}, base, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.cfg.FrontendsChangedFrom(tc.base)
			if ok != tc.ok || !slices.Equal(got, tc.want) {
				t.Fatalf("got %v %v, want %v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	if got := ChangedFrontends(base, now); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("ChangedFrontends: %v", got)
	}
	changed := slices.Clone(now)
	changed[0].Backend = "x"
	if got := ChangedFrontends(now, changed[:2]); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("ChangedFrontends: %v, want [a c]", got)
	}
}
