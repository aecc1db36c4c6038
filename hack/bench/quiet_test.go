package main

import (
	"slices"
	"testing"
)

// -haproxy-quiet reaches the controller under test only (its init and its
// run), and the base run keeps a directory and a column name of its own
// even when -base-controller-bin and -controller-bin are one binary.
func TestHAProxyQuietOnlyUnderTest(t *testing.T) {
	for _, c := range []struct {
		name            string
		quiet, baseRun  bool
		listeners       string
		wantInit        []string
		wantQuiet       bool
		wantDir, wantAs string
	}{
		{"off", false, false, "tproxy", []string{"--listeners", "tproxy"}, false, "/w/hybrid-tproxy", "hybrid-tproxy"},
		{"off, base", false, true, "tproxy", []string{"--listeners", "tproxy"}, false, "/w/hybrid-tproxy-base", "base-tproxy"},
		{"on", true, false, "tproxy", []string{"--listeners", "tproxy", "--haproxy-quiet"}, true, "/w/hybrid-tproxy-quiet", "hybrid-tproxy-quiet"},
		{"on, base", true, true, "tproxy", []string{"--listeners", "tproxy"}, false, "/w/hybrid-tproxy-base", "base-tproxy"},
		{"on, ports", true, false, "ports", []string{"--haproxy-quiet"}, true, "/w/hybrid-ports-quiet", "hybrid-ports-quiet"},
	} {
		cfg := config{haproxyQuiet: c.quiet, baseRun: c.baseRun, listeners: c.listeners}
		if got := cfg.initArgs(); !slices.Equal(got, c.wantInit) {
			t.Errorf("%s: init args %q, want %q", c.name, got, c.wantInit)
		}
		h := &haproxyProc{cfg: "/w/haproxy.cfg"}
		if got := slices.Contains(cfg.runArgs("/w/kubeconfig", h, "hybrid"), "--haproxy-quiet"); got != c.wantQuiet {
			t.Errorf("%s: run has --haproxy-quiet %v, want %v", c.name, got, c.wantQuiet)
		}
		if got := cfg.runDir("/w", "hybrid"); got != c.wantDir {
			t.Errorf("%s: run directory %q, want %q", c.name, got, c.wantDir)
		}
		if got := cfg.runName("hybrid"); got != c.wantAs {
			t.Errorf("%s: run named %q, want %q", c.name, got, c.wantAs)
		}
	}
}
