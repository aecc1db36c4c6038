package ingress

import (
	"testing"
	"time"
)

// TestParseConnect: proxy-connect-timeout (whole seconds) and
// timeout-connect (a HAProxy time, rounded up to the millisecond) as the
// backends' connect timeout and the tag of their names; nginx's key wins;
// 5 s is the defaults' (no backend of its own).
func TestParseConnect(t *testing.T) {
	n, h := NginxPrefix, HAProxyPrefix
	for _, tc := range []struct {
		ann  map[string]string
		want time.Duration // backendConnect
		tag  string
	}{
		{map[string]string{n + "proxy-connect-timeout": "2"}, 2 * time.Second, "c2000"},
		{map[string]string{n + "proxy-connect-timeout": "5"}, 0, ""},
		{map[string]string{h + "timeout-connect": "500ms"}, 500 * time.Millisecond, "c500"},
		{map[string]string{h + "timeout-connect": "1500us"}, 2 * time.Millisecond, "c2"},
		{map[string]string{h + "timeout-connect": "1500"}, 1500 * time.Millisecond, "c1500"},
		{map[string]string{h + "timeout-connect": "500ms", n + "proxy-connect-timeout": "3"}, 3 * time.Second, "c3000"},
		{map[string]string{HAProxyOldPrefix + "timeout-connect": "1s"}, time.Second, "c1000"},
		{map[string]string{}, 0, ""},
	} {
		s, _, refused := parseAnnotations(tc.ann)
		if refused != "" {
			t.Errorf("%v: refused %q", tc.ann, refused)
			continue
		}
		if got := s.backendConnect(); got != tc.want || connectTag(got) != tc.tag {
			t.Errorf("%v: %v tag %q, want %v tag %q", tc.ann, got, connectTag(got), tc.want, tc.tag)
		}
	}
}
