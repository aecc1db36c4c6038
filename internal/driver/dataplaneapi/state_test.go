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

// A server PUT outside a transaction that the real API v3.4.0 answers with
// a reload although only live fields differ (TestContractLivePuts): the
// persister writes such a slot as text instead.
func TestPutReloads(t *testing.T) {
	for _, c := range []struct {
		what      string
		cur, want Object
		reloads   bool
	}{
		{"address and port", Object{"address": "192.0.2.1", "port": int64(80)}, Object{"address": "192.0.2.2", "port": int64(80)}, false},
		{"a node's slot: address", Object{"address": "192.0.2.1"}, Object{"address": "192.0.2.2"}, true},
		{"a node's slot: maintenance", Object{"address": "192.0.2.1", "maintenance": "enabled"}, Object{"address": "192.0.2.1"}, false},
		{"port removed", Object{"address": "192.0.2.1", "port": int64(80)}, Object{"address": "192.0.2.1"}, true},
		{"weight removed", Object{"address": "192.0.2.1", "port": int64(80), "weight": int64(5)}, Object{"address": "192.0.2.1", "port": int64(80)}, true},
	} {
		if got := putReloads(c.cur, c.want); got != c.reloads {
			t.Errorf("%s: putReloads %v, want %v", c.what, got, c.reloads)
		}
	}
}
