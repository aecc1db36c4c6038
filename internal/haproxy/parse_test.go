package haproxy

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"testing/iotest"
)

// Captured from HAProxy 2.6.12 on this machine.
const procAfterReload = `#<PID>          <type>          <reloads>       <uptime>        <version>      
7524            master          4 [failed: 0]   0d00h00m29s     2.6.12-1+deb12u4
# workers
10515           worker          0               0d00h00m00s     2.6.12-1+deb12u4
# old workers
10227           worker          1               0d00h00m02s     2.6.12-1+deb12u4
# programs

`

const procFailed = `#<PID>          <type>          <reloads>       <uptime>        <version>      
7524            master          6 [failed: 2]   0d00h01m10s     2.6.12-1+deb12u4
# workers
10515           worker          2               0d00h00m41s     2.6.12-1+deb12u4
# programs
`

// Captured from HAProxy 3.0.11 (Debian trixie's) after a failed reload.
const procFailed30 = `#<PID>          <type>          <reloads>       <uptime>        <version>      
25008           master          2 [failed: 1]   0d00h00m14s     3.0.11-1+deb13u4
# workers
25262           worker          1               0d00h00m10s     3.0.11-1+deb13u4
# programs

`

func TestParseProc(t *testing.T) {
	p, err := ParseProc(procAfterReload)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%+v", p); got != "{MasterPID:7524 Version:2.6.12-1+deb12u4 Reloads:4 Failed:0 Workers:[10515] OldWorkers:[10227]}" {
		t.Fatalf("got %s", got)
	}
	p, err = ParseProc(procFailed)
	if err != nil || p.Reloads != 6 || p.Failed != 2 || len(p.Workers) != 1 || p.Workers[0] != 10515 {
		t.Fatalf("got %+v, %v", p, err)
	}
	p, err = ParseProc(procFailed30)
	if err != nil || p.Reloads != 2 || p.Failed != 1 || len(p.Workers) != 1 || p.Workers[0] != 25262 ||
		p.Version.Branch() != "3.0" || !p.Version.SyncReload() {
		t.Fatalf("3.0: got %+v, %v", p, err)
	}
	if _, err := ParseProc("garbage\n"); err == nil {
		t.Fatal("no error for garbage")
	}
}

const stateHeader = "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n"

func TestParseServersState(t *testing.T) {
	out := stateHeader +
		"3 be 1 s1 127.0.0.1 2 12 1 1 1 6 3 1 6 0 0 0 - 18090 - 0 0 - - 0\n" +
		"3 be 2 s2 ::1 0 5 1 1 1 8 2 0 14 0 0 0 - 1 - 0 0 - - 0\n" +
		"4 other 1 x - 0 32 1 1 1 8 2 0 14 0 0 0 example.com - - 0 0 - - 0\n"
	got, err := ParseServersState(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []ServerState{
		{Backend: "be", Server: "s1", Addr: netip.MustParseAddr("127.0.0.1"), Port: 18090, OpState: 2, AdminState: 12},
		{Backend: "be", Server: "s2", Addr: netip.MustParseAddr("::1"), Port: 1, OpState: 0, AdminState: 5},
		{Backend: "other", Server: "x", OpState: 0, AdminState: 32},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
	if !got[0].Drain() || got[0].Maint() || !got[1].Maint() || got[1].Drain() || !got[2].Maint() {
		t.Fatal("maint/drain flags wrong")
	}
	if s := (ServerState{AdminState: AdminConfigMaint}); s.Maint() {
		t.Fatal("config bit alone must not mean maint")
	}
	for _, bad := range []string{"", "2\n# x\n", "1\n# be_name\n", stateHeader + "3 be 1 s1 nope 2 12 1 1 1 6 3 1 6 0 0 0 - 1 - 0 0 - - 0\n"} {
		if _, err := ParseServersState(bad); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}

func BenchmarkParseServersState(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(stateHeader)
	for i := range 30000 {
		fmt.Fprintf(&sb, "%d be%d %d s%d 10.0.%d.%d 2 4 1 1 100 6 3 1 6 0 0 0 - 8080 - 0 0 - - 0\n", i/6+3, i/6, i%6+1, i%6+1, i/256%256, i%256)
	}
	out := sb.String()
	for b.Loop() {
		if s, err := ParseServersState(out); err != nil || len(s) != 30000 {
			b.Fatal(len(s), err)
		}
	}
}

func TestAnswerReaderFraming(t *testing.T) {
	stream := "\n> [3]: No such server.\n\n> \n> 1\n# be_id\nrow\n\n> [4]: Invalid addr 'x' by 'stats socket command'\n\n> " +
		strings.Repeat("x", 200000) + "\n\n> "
	rd := newAnswerReader(iotest.HalfReader(strings.NewReader(stream)))
	rd.buf = make([]byte, 16) // force growth and compaction
	want := []Answer{{"", -1}, {"No such server.", 3}, {"", -1}, {"1\n# be_id\nrow", -1},
		{"Invalid addr 'x' by 'stats socket command'", 4}, {strings.Repeat("x", 200000), -1}}
	for i, w := range want {
		text, err := rd.next()
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if a := parseAnswer(text); a != w {
			t.Fatalf("answer %d = %+v, want %+v", i, a, w)
		}
	}
	if _, err := rd.next(); err == nil {
		t.Fatal("want error at end of stream")
	}
	if !(Answer{"No such server.", 3}).Failed() || !(Answer{"Invalid addr", 4}).Failed() ||
		(Answer{"IP changed from", 4}).Failed() || (Answer{"Name: HAProxy", -1}).Failed() {
		t.Fatal("Answer.Failed misclassifies")
	}
}

// HAProxy's [ALERT] lines without their prefix, the others left out.
func TestAlertLines(t *testing.T) {
	for _, c := range []struct{ out, want string }{
		{"", ""},
		{"[NOTICE]   (21137) : Reloading HAProxy\n[ALERT]    (21137) : [/usr/sbin/haproxy.main()] Cannot raise FD limit to 2241, limit is 1000.\n[WARNING]  (21137) : Loading failure!\n",
			"[/usr/sbin/haproxy.main()] Cannot raise FD limit to 2241, limit is 1000."},
		{"[ALERT] config : a\n[ALERT]    (1) : b\n", "config : a; b"},
		{"[ALERT]    (1) : \n", ""},
	} {
		if got := AlertLines(c.out); got != c.want {
			t.Errorf("AlertLines(%q) = %q, want %q", c.out, got, c.want)
		}
	}
}
