package model

import (
	"slices"
	"testing"
)

// TestHTTPShape: a table's methods answer from its Shape when it has
// one (a producer's kept shape, never walked again), ShapeOf computes
// from the hosts and actions alone, and ActionNames is the actions' part.
func TestHTTPShape(t *testing.T) {
	h := &HTTP{
		Hosts: []HTTPHost{{Name: "a.example.com", Rules: []HTTPRule{
			{Path: "/", Headers: []HeaderMatch{{Name: "x-b", Value: "1"}, {Name: "x-a", Value: "2"}}},
			{Path: "/m", Method: "GET"},
			{Path: "/n"},
		}}},
		Actions: []HTTPAction{
			{Set: []HeaderValue{{Name: "x-set", Value: "1"}}, Remove: []string{"x-gone"}},
			{Ext: &HTTPActionExt{Response: HeaderMods{Add: []HeaderValue{{Name: "x-resp", Value: "1"}}}}},
			{Access: &HTTPAccess{}},
		},
	}
	want := HTTPShape{HeaderSets: [][]string{{}, {MethodMatch}, {"x-a", "x-b"}}, Modified: []string{"x-gone", "x-set"},
		Response: []string{"x-resp"}, Access: true}
	if want.HeaderSets[1][0] > want.HeaderSets[2][0] {
		want.HeaderSets[1], want.HeaderSets[2] = want.HeaderSets[2], want.HeaderSets[1]
	}
	if got := ShapeOf(h); !got.Equal(want) {
		t.Fatalf("ShapeOf = %+v, want %+v", got, want)
	}
	acts := ActionNames(h.Actions)
	acts.SortNames()
	if !slices.Equal(acts.Modified, want.Modified) || !slices.Equal(acts.Response, want.Response) || !acts.Access {
		t.Errorf("ActionNames = %+v", *acts)
	}
	if ActionNames(h.Actions[:0]) != nil {
		t.Error("ActionNames of no action is not nil")
	}
	kept := &HTTPShape{HeaderSets: [][]string{{}, {"kept"}}, Modified: []string{"m"}, Response: []string{"r"}, Backend: []string{"b"}}
	h.SetShape(kept)
	for _, tc := range []struct {
		name     string
		got, exp any
	}{
		{"HeaderSets", h.HeaderSets(), kept.HeaderSets}, {"ModifiedHeaders", h.ModifiedHeaders(), kept.Modified},
		{"ResponseHeaders", h.ResponseHeaders(), kept.Response}, {"BackendHeaders", h.BackendHeaders(), kept.Backend},
		{"HasAccess", h.HasAccess(), false},
	} {
		if !equalAny(tc.got, tc.exp) {
			t.Errorf("%s with a Shape = %v, want the Shape's %v", tc.name, tc.got, tc.exp)
		}
	}
	if got := ShapeOf(h); !got.Equal(want) {
		t.Errorf("ShapeOf a table with a Shape = %+v, want it computed: %+v", got, want)
	}
}

func equalAny(a, b any) bool {
	switch x := a.(type) {
	case [][]string:
		return slices.EqualFunc(x, b.([][]string), slices.Equal)
	case []string:
		return slices.Equal(x, b.([]string))
	}
	return a == b
}

// TestHTTPShapeWithoutKept: a table without a kept shape (the zero
// value, one built by hand) answers every method as the same table
// Shaped does, from a walk: no panic, nothing to forget.
func TestHTTPShapeWithoutKept(t *testing.T) {
	build := func() *HTTP {
		return &HTTP{Hosts: []HTTPHost{{Name: "a.example.com", Rules: []HTTPRule{{Path: "/", Headers: []HeaderMatch{{Name: "x-a", Value: "1"}}}}}},
			Actions: []HTTPAction{{Set: []HeaderValue{{Name: "x-set", Value: "1"}}, Access: &HTTPAccess{NoLog: true}}}}
	}
	bare, shaped := build(), Shaped(build())
	if bare.KeptShape() != nil || shaped.KeptShape() == nil {
		t.Fatalf("kept shapes: bare %v, Shaped %v", bare.KeptShape(), shaped.KeptShape())
	}
	for _, tc := range []struct {
		name     string
		got, exp any
	}{
		{"HeaderSets", bare.HeaderSets(), shaped.HeaderSets()}, {"ModifiedHeaders", bare.ModifiedHeaders(), shaped.ModifiedHeaders()},
		{"ResponseHeaders", bare.ResponseHeaders(), shaped.ResponseHeaders()}, {"BackendHeaders", bare.BackendHeaders(), shaped.BackendHeaders()},
		{"HasAccess", bare.HasAccess(), true},
		{"SameShape", bare.SameShape(shaped) && shaped.SameShape(bare) && (&HTTP{}).SameShape(&HTTP{}), true},
	} {
		if !equalAny(tc.got, tc.exp) {
			t.Errorf("%s without a kept shape = %v, want %v", tc.name, tc.got, tc.exp)
		}
	}
	if (&HTTP{}).SameShape(shaped) {
		t.Error("an empty table has the shape of one with rules and actions")
	}
}
