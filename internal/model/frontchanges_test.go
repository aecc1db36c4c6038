package model

import (
	"slices"
	"testing"
)

func TestFrontendChangesChangedFrom(t *testing.T) {
	base := []Frontend{{Name: "a"}, {Name: "c"}}
	now := []Frontend{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	said := &FrontendChanges{Base: base, Of: now, Names: []string{"b"}}
	for _, tc := range []struct {
		name string
		fc   *FrontendChanges
		of   []Frontend
		base []Frontend
		want []string
		ok   bool
	}{
		{"said", said, now, base, []string{"b"}, true},
		{"unknown (a whole pass)", nil, now, base, nil, false},
		{"from another base", said, now, slices.Clone(base), nil, false},
		{"other frontends (a stage changed them)", said, slices.Clone(now), base, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.fc.ChangedFrom(tc.of, tc.base)
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
