package nodes

import (
	"os"
	"strings"
	"testing"
)

// A machine without what the tier runs fails saying what is missing.
func TestPreflightSaysWhy(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := Preflight()
	if err == nil {
		t.Fatal("Preflight passed without containerd, ctr and nsenter on PATH")
	}
	for _, want := range []string{"no containerd command", "no ctr command", "apt-get install"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Preflight error %q does not say %q", err, want)
		}
	}
	if os.Geteuid() != 0 && !strings.Contains(err.Error(), "not root") {
		t.Errorf("Preflight error %q does not say it needs root", err)
	}
}
