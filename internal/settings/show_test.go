package settings

import (
	"strings"
	"testing"
)

func TestShow(t *testing.T) {
	long := strings.Repeat("a", MaxShown+1)
	for _, tt := range []struct{ in, value, name string }{
		{"roundrobin", `"roundrobin"`, "roundrobin"},
		{"haproxy-k8s-sync.io/balance", `"haproxy-k8s-sync.io/balance"`, "haproxy-k8s-sync.io/balance"},
		{"", `""`, `""`},
		{"a\nb", `"a\nb"`, `"a\nb"`},
		{"a b", `"a b"`, `"a b"`},
		{`a"b`, `"a\"b"`, `"a\"b"`},
		{long, `"` + long[:MaxShown] + `"... (257 bytes)`, `"` + long[:MaxShown] + `"... (257 bytes)`},
		// cut at a rune boundary: é is two bytes, the 256th byte is its first
		{strings.Repeat("a", MaxShown-1) + "é", `"` + strings.Repeat("a", MaxShown-1) + `"... (257 bytes)`, ""},
	} {
		if got := ShowValue(tt.in); got != tt.value {
			t.Errorf("ShowValue(%.20q) = %s, want %s", tt.in, got, tt.value)
		}
		if got := ShowName(tt.in); tt.name != "" && got != tt.name {
			t.Errorf("ShowName(%.20q) = %s, want %s", tt.in, got, tt.name)
		}
	}
}
