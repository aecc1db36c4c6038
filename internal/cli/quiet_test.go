package cli

import (
	"bytes"
	"strings"
	"testing"
)

// --haproxy-quiet writes HAProxy's quiet into global, and only with it
// (docs/health-checks.md says what it silences).
func TestHAProxyQuietFlag(t *testing.T) {
	for _, c := range []struct {
		args  []string
		quiet bool
	}{
		{nil, false},
		{[]string{"--haproxy-quiet"}, true},
		{[]string{"--haproxy-quiet=false"}, false},
	} {
		args := append([]string{"haproxy-k8s-sync", "render", "-f", "testdata/udp.yaml"}, c.args...)
		var out, errb bytes.Buffer
		if code := Main(args, nil, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d:\n%s", c.args, code, errb.String())
		}
		global, _, _ := strings.Cut(out.String(), "\ndefaults")
		if got := strings.Contains(global, "\n\tquiet\n"); got != c.quiet {
			t.Errorf("%v: quiet in global %v, want %v:\n%s", c.args, got, c.quiet, global)
		}
	}
}
