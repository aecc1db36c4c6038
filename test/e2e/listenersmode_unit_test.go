package e2e

import (
	"os"
	"os/exec"
	"testing"
)

// TestSuiteTProxy: HKS_E2E_LISTENERS forces a mode; unset or auto is
// tproxy exactly where a test can have a network namespace of its own
// (root), as run's --listeners=auto is tproxy where the controller can set
// it up; a value of no mode is refused, not read as one.
func TestSuiteTProxy(t *testing.T) {
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip(8) (iproute2)")
	}
	root := os.Geteuid() == 0
	for _, c := range []struct {
		value string
		want  bool
	}{
		{"tproxy", true},
		{"ports", false},
		{"", root},
		{"auto", root},
	} {
		t.Run(c.value, func(t *testing.T) {
			t.Setenv(envListeners, c.value)
			if got := suiteTProxy(); got != c.want {
				t.Errorf("%s=%q: tproxy %v, want %v", envListeners, c.value, got, c.want)
			}
			if got := suiteListening().tproxy; got != c.want {
				t.Errorf("%s=%q: suiteListening().tproxy %v, want %v", envListeners, c.value, got, c.want)
			}
		})
	}
	t.Run("tproxi", func(t *testing.T) {
		t.Setenv(envListeners, "tproxi")
		defer func() {
			if recover() == nil {
				t.Errorf("%s=tproxi read as a mode", envListeners)
			}
		}()
		suiteTProxy()
	})
}
