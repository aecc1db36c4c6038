package haproxy

import (
	"strings"
	"testing"
)

// FuzzRuntimeParsers feeds one answer of HAProxy's Runtime API or master
// CLI to every parser of them: none may panic, and what they accept must
// hold together (a server state names its backend and server; a show
// stat row its proxy). Plain `go test` runs the seeds; `make fuzz`
// explores for a fixed time.
func FuzzRuntimeParsers(f *testing.F) {
	for _, s := range []string{
		procAfterReload, procFailed, procFailed30, reloadOK30, reloadFailed30, "3.3-dev5", "garbage\n", "",
		stateHeader + "3 be 1 s1 127.0.0.1 2 12 1 1 1 6 3 1 6 0 0 0 - 18090 - 0 0 - - 0\n",
		stateHeader + "3 be 2 s2 ::1 0 5 1 1 1 8 2 0 14 0 0 0 - 1 - 0 0 - - 0\n4 x\n",
		"1\n# be_name srv_name\nb s\n",
		"# pxname,svname,status,addr,\nbe,s1,UP,127.0.0.1:80,\nbe,BACKEND,UP,,\n",
		"# pxname,svname,status\n\"be,s1,UP\n",
		"Name: HAProxy\nVersion: 2.6.12\nPid: 1\ndescription: hks:abc\n",
		"[3]: No such server.\n", "> \n> 1\n# be_id\nrow\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		if states, err := ParseServersState(out); err == nil {
			for _, s := range states {
				if s.Backend == "" || s.Server == "" || strings.ContainsAny(s.Backend+s.Server, " \n") {
					t.Fatalf("server state without a clean backend or server name: %+v", s)
				}
			}
		}
		if rows, err := ParseStat(out, "addr"); err == nil {
			for _, r := range rows {
				if r.Server == "FRONTEND" || r.Server == "BACKEND" {
					t.Fatalf("a %s line read as a server: %+v", r.Server, r)
				}
			}
		}
		if p, err := ParseProc(out); err == nil && (p.MasterPID <= 0 || p.Reloads < 0 || p.Failed < 0) {
			t.Fatalf("a master without a PID, or a negative count: %+v", p)
		}
		if ok, log, err := ParseReloadAnswer(out); err != nil && (ok || log != nil) {
			t.Fatalf("a refused reload answer with an outcome: %v %q", ok, log)
		}
		if v, err := ParseVersion(out); err == nil && (!v.Known() || v.Minor < 0 || v.Patch < 0) {
			t.Fatalf("a version read as nothing, or negative: %+v", v)
		}
		_ = ParseInfo(out)
		_ = parseAnswer(out)
	})
}
