package ingress

import (
	"fmt"
	"testing"
)

// TestParseGlobalLimit: the global-rate-limit keys read into the model's
// limit; malformed values, a limit without a window and keys with text
// that is not nginx variables or plain refuse the Ingress.
func TestParseGlobalLimit(t *testing.T) {
	const g = NginxPrefix + "global-rate-limit"
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		want    string // the model's limit, fmt's %v; "<nil>": none
		refused bool
	}{
		{"limit and window", map[string]string{g: "5", g + "-window": "1m"}, "&{5 60  [] ns/ing}", false},
		{"key and ignored", map[string]string{g: "5", g + "-window": "30s", g + "-key": "${http_x_api_client}", g + "-ignored-cidrs": "10.0.0.0/8, 192.0.2.1"},
			"&{5 30 ${http_x_api_client} [10.0.0.0/8 192.0.2.1/32] ns/ing}", false},
		{"default key", map[string]string{g: "5", g + "-window": "1h", g + "-key": "$remote_addr"}, "&{5 3600  [] ns/ing}", false},
		{"zero is none", map[string]string{g: "0", g + "-window": "1m"}, "<nil>", false},
		{"window alone", map[string]string{g + "-window": "1m"}, "<nil>", false},
		{"no window", map[string]string{g: "5"}, "", true},
		{"not a number", map[string]string{g: "5r", g + "-window": "1m"}, "", true},
		{"negative", map[string]string{g: "-1", g + "-window": "1m"}, "", true},
		{"window not a duration", map[string]string{g: "5", g + "-window": "60"}, "", true},
		{"window under a second", map[string]string{g: "5", g + "-window": "500ms"}, "", true},
		{"window not whole seconds", map[string]string{g: "5", g + "-window": "1500ms"}, "", true},
		{"window over an hour", map[string]string{g: "5", g + "-window": "61m"}, "", true},
		{"key with a space", map[string]string{g: "5", g + "-window": "1m", g + "-key": "$remote_addr x"}, "", true},
		{"key with a quote", map[string]string{g: "5", g + "-window": "1m", g + "-key": "$host\""}, "", true},
		{"key with a format", map[string]string{g: "5", g + "-window": "1m", g + "-key": "%[src]"}, "", true},
		{"unknown variable", map[string]string{g: "5", g + "-window": "1m", g + "-key": "$upstream_addr"}, "", true},
		{"ignored not a range", map[string]string{g: "5", g + "-window": "1m", g + "-ignored-cidrs": "10.0.0.0/33"}, "", true},
	} {
		s, _, refused := parseAnnotations(tc.ann)
		if (refused != "") != tc.refused {
			t.Errorf("%s: refused %q, want refused %v", tc.name, refused, tc.refused)
			continue
		}
		if tc.refused {
			continue
		}
		s.access.global.scope = "ns/ing"
		if got := fmt.Sprintf("%v", s.access.global.model()); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
