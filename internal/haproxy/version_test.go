package haproxy

import (
	"errors"
	"slices"
	"testing"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in            string
		branch        string
		patch         int
		sync, atLeast bool // SyncReload, AtLeast(3, 0) (and GuardsServerDeletion)
		bad           bool
	}{
		{in: "2.6.12-1+deb12u4", branch: "2.6", patch: 12},
		{in: "3.0.11-1+deb13u4", branch: "3.0", patch: 11, sync: true, atLeast: true},
		{in: "2.7.0", branch: "2.7", sync: true},
		{in: "3.3-dev5", branch: "3.3", sync: true, atLeast: true},
		{in: "  2.8.5 ", branch: "2.8", patch: 5, sync: true},
		{in: "10.1.2", branch: "10.1", patch: 2, sync: true, atLeast: true},
		{in: "", bad: true},
		{in: "3", bad: true},
		{in: "3.x.1", bad: true},
		{in: "1.2.3.4", bad: true},
		{in: "-1.2", bad: true},
		{in: "0d00h00m14s", bad: true},
		{in: "0.0", bad: true},
		{in: "99999.1", bad: true},
	} {
		v, err := ParseVersion(tc.in)
		if tc.bad {
			if err == nil || !errors.Is(err, ErrCommand) || v.Known() {
				t.Errorf("%q: %+v, %v; want an ErrCommand", tc.in, v, err)
			}
			continue
		}
		if err != nil || v.Branch() != tc.branch || v.Patch != tc.patch || v.SyncReload() != tc.sync || v.AtLeast(3, 0) != tc.atLeast || v.GuardsServerDeletion() != tc.atLeast {
			t.Errorf("%q: %+v (branch %s, sync %v), %v", tc.in, v, v.Branch(), v.SyncReload(), err)
		}
	}
	if (Version{}).SyncReload() || (Version{}).Known() || (Version{}).GuardsServerDeletion() {
		t.Error("the zero Version claims a synchronous reload, to be known, or to guard server deletion")
	}
}

// Captured from HAProxy 3.0.11's master (Debian trixie's package).
const (
	reloadOK30 = "Success=1\n--\n[NOTICE]   (25008) : New worker (25262) forked\n[NOTICE]   (25008) : Loading success.\n" +
		"[NOTICE]   (25008) : haproxy version is 3.0.11-1+deb13u4\n[WARNING]  (25008) : Former worker (25032) exited with code 0 (Exit)\n\n"
	reloadFailed30 = "Success=0\n--\n[NOTICE]   (25008) : haproxy version is 3.0.11-1+deb13u4\n" +
		"[ALERT]    (25008) : config : parsing [h.cfg:14] : unknown keyword 'bogus' in 'backend' section\n" +
		"[ALERT]    (25008) : config : Fatal errors found in configuration.\n[WARNING]  (25008) : Loading failure!\n\n"
)

func TestParseReloadAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ok       bool
		lines    int
		alerts   []string
		err      error
	}{
		{name: "success", in: reloadOK30, ok: true, lines: 4},
		{name: "failure", in: reloadFailed30, lines: 4, alerts: []string{
			"config : parsing [h.cfg:14] : unknown keyword 'bogus' in 'backend' section",
			"config : Fatal errors found in configuration.",
		}},
		{name: "no logs", in: "Success=1\n", ok: true},
		{name: "busy (3.1+)", in: "Success=0\n--\nAnother reload is still in progress.\n", err: ErrReloadInProgress},
		{name: "busy, bare line", in: "Another reload is still in progress.\n", err: ErrReloadInProgress},
		{name: "failure quoting the words", in: "Success=0\n--\n[ALERT]    (7) : config : Another reload is still in progress\n", lines: 1,
			alerts: []string{"config : Another reload is still in progress"}},
		{name: "empty (2.6)", in: "", err: ErrCommand},
		{name: "other", in: "Unknown command: 'reload'\n", err: ErrCommand},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, log, err := ParseReloadAnswer(tc.in)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || ok != tc.ok || len(log) != tc.lines {
				t.Fatalf("ok %v, %d lines %q, err %v", ok, len(log), log, err)
			}
			if got := (ReloadResult{Log: log}).Alerts(); !slices.Equal(got, tc.alerts) {
				t.Fatalf("alerts %q, want %q", got, tc.alerts)
			}
		})
	}
}
