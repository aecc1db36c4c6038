package ingress

import (
	"fmt"
	"testing"
)

// Two allow lists: the older name beside the new one is not read; two
// prefixes that disagree refuse the Ingress; deny lists add up.
func TestParseAccess(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		allow   string
		deny    string
		refused bool
	}{
		{"new name wins", map[string]string{NginxPrefix + "allowlist-source-range": "10.0.0.0/8", NginxPrefix + "whitelist-source-range": "0.0.0.0/0"}, "[10.0.0.0/8]", "[]", false},
		{"older name alone", map[string]string{NginxPrefix + "whitelist-source-range": "10.0.0.1/8"}, "[10.0.0.0/8]", "[]", false},
		{"two prefixes agree", map[string]string{NginxPrefix + "allowlist-source-range": "10.0.0.0/8", HAProxyPrefix + "allowlist-source-range": "10.0.0.0/8"}, "[10.0.0.0/8]", "[]", false},
		{"two prefixes differ", map[string]string{NginxPrefix + "allowlist-source-range": "10.0.0.0/8", HAProxyPrefix + "allowlist-source-range": "0.0.0.0/0"}, "", "", true},
		{"deny lists add up", map[string]string{NginxPrefix + "denylist-source-range": "10.0.0.0/8,::1", HAProxyPrefix + "denylist-source-range": "192.0.2.0/24 10.0.0.0/8"}, "[]", "[192.0.2.0/24 10.0.0.0/8 ::1/128]", false},
		{"mapped kept as written", map[string]string{NginxPrefix + "allowlist-source-range": "::ffff:192.0.2.0/120"}, "[::ffff:192.0.2.0/120]", "[]", false},
	} {
		s, _, refused := parseAnnotations(tc.ann)
		if (refused != "") != tc.refused {
			t.Errorf("%s: refused %q, want refused %v", tc.name, refused, tc.refused)
			continue
		}
		if tc.refused {
			continue
		}
		if a, d := fmt.Sprint(s.access.allow), fmt.Sprint(s.access.deny); a != tc.allow || d != tc.deny {
			t.Errorf("%s: allow %s deny %s, want %s and %s", tc.name, a, d, tc.allow, tc.deny)
		}
	}
}
