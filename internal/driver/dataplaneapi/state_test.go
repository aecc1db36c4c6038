package dataplaneapi

import (
	"encoding/json"
	"testing"
)

func TestSame(t *testing.T) {
	for _, tc := range []struct {
		a, b any
		want bool
	}{
		{json.Number("2000"), int64(2000), true},
		{json.Number("2000"), int64(2001), false},
		{float64(3), int64(3), true},
		{map[string]any{"inter": json.Number("2000"), "check": "enabled"}, map[string]any{"check": "enabled", "inter": int64(2000)}, true},
		{map[string]any{"check": "enabled"}, map[string]any{"check": "enabled", "rise": int64(2)}, false},
		{map[string]any{"a": []any{"x"}}, map[string]any{"a": []any{"x"}}, true},
		{"1", json.Number("1"), false},
		{true, true, true},
		{nil, "x", false},
	} {
		if got := same(tc.a, tc.b); got != tc.want {
			t.Errorf("same(%#v, %#v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
