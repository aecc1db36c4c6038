package cli

import (
	"strings"
	"testing"
)

// TestRunAsRefuses: --announce-run-as takes UID:GID of a user not root;
// anything else is refused before anything runs.
func TestRunAsRefuses(t *testing.T) {
	for _, spec := range []string{"99", "haproxy:haproxy", "0:0", "99:", ":99", "-1:99", "99:-1"} {
		err := runAs(spec)
		if err == nil || !strings.Contains(err.Error(), "--announce-run-as") {
			t.Errorf("%q: %v, want the flag refused", spec, err)
		}
	}
	if err := runAs(""); err != nil {
		t.Errorf("empty: %v", err)
	}
}
