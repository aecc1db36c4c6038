package haproxy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

func TestSetServerTrafficAndStates(t *testing.T) {
	l := startLB(t, "")
	ctx := testCtx(t)

	s := l.server(t, "s1")
	if s.AdminState != AdminForcedMaint|AdminConfigMaint || !s.Maint() || s.OpState != OpStopped {
		t.Fatalf("disabled slot: got %+v, want admin 5 (maint), op 0", s)
	}

	port := greeter(t, "hello\n")
	ans := l.useSlot(t, "s1", port)
	want0 := "no need to change the addr, port changed from '1' to '" + fmt.Sprint(port) + "' by 'stats socket command'"
	if l.version(t).AtLeast(3, 0) { // 3.0 leaves out the first part
		want0 = "port changed from '1' to '" + fmt.Sprint(port) + "' by 'stats socket command'"
	}
	if ans[0] != want0 || ans[1] != "" {
		t.Fatalf("answers %q, want [%q \"\"]", ans, want0)
	}

	s = l.waitOpState(t, "s1", OpRunning)
	if s.Addr != netip.MustParseAddr("127.0.0.1") || s.Port != uint16(port) {
		t.Fatalf("addr/port: %+v", s)
	}
	// The config bit stays after "state ready"; the server is in service.
	if s.AdminState != AdminConfigMaint || s.Maint() || s.Drain() {
		t.Fatalf("ready slot: %+v, want admin state 4, not maint, not drain", s)
	}
	eventually(t, 5*time.Second, "traffic through frontend", func() error {
		got, err := l.dialFrontend()
		if err == nil && got != "hello\n" {
			err = fmt.Errorf("got %q", got)
		}
		return err
	})

	if _, err := l.rt.ExecChecked(ctx, []string{"set server be/s1 state drain"}); err != nil {
		t.Fatal(err)
	}
	if s = l.server(t, "s1"); s.AdminState != AdminConfigMaint|AdminForcedDrain || !s.Drain() || s.Maint() {
		t.Fatalf("drained slot: %+v, want admin 12, drain", s)
	}
	if _, err := l.rt.ExecChecked(ctx, []string{"set server be/s1 state maint"}); err != nil {
		t.Fatal(err)
	}
	if s = l.server(t, "s1"); s.AdminState != AdminConfigMaint|AdminForcedMaint || !s.Maint() || s.Drain() {
		t.Fatalf("maint slot: %+v, want admin 5, maint", s)
	}
	// Changing the address of a slot answers with the old and new values.
	ans, err := l.rt.ExecChecked(ctx, []string{"set server be/s1 addr 127.0.0.2 port 7"})
	if err != nil || ans[0] != fmt.Sprintf("IP changed from '127.0.0.1' to '127.0.0.2', port changed from '%d' to '7' by 'stats socket command'", port) {
		t.Fatalf("addr change: %q, %v", ans, err)
	}
}

// TestHealthChecksRunAfterReady proves that a "disabled" slot with
// default-server check gets health-checked once made ready, without
// "enable health".
func TestHealthChecksRunAfterReady(t *testing.T) {
	l := startLB(t, "")
	port := haproxytest.FreePort(t) // nothing listens yet
	l.useSlot(t, "s2", port)
	l.waitOpState(t, "s2", OpStopped)

	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	l.waitOpState(t, "s2", OpRunning)
	_ = ln.Close()
	l.waitOpState(t, "s2", OpStopped)
}

func TestExecErrors(t *testing.T) {
	l := startLB(t, "")
	ctx := testCtx(t)
	cmds := []string{
		"set server be/nope state ready",
		"set server nope/s1 state ready",
		"set server be/s1 state bogus",
		"set server be/s1 addr not-an-ip",
		"set server be/s3 state maint",
		"show servers state nope",
	}
	ans, err := l.rt.ExecChecked(ctx, cmds)
	want := []string{
		"No such server.",
		"No such backend.",
		"'set server <srv> state' expects 'ready', 'drain' and 'maint'.",
		"Invalid addr 'not-an-ip' by 'stats socket command'",
		"",
		"Can't find backend.",
	}
	if l.version(t).AtLeast(3, 0) { // 3.0 no longer says who asked
		want[3] = "Invalid addr 'not-an-ip'"
	}
	if strings.Join(ans, "|") != strings.Join(want, "|") {
		t.Fatalf("answers:\n%q\nwant\n%q", ans, want)
	}
	if !errors.Is(err, ErrCommand) {
		t.Fatalf("err = %v, want ErrCommand", err)
	}
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Index != 0 || ce.Answer != "No such server." {
		t.Fatalf("first CommandError = %+v", ce)
	}
	if n := strings.Count(err.Error(), "failed:"); n != 5 {
		t.Fatalf("want 5 failed commands, got %d: %v", n, err)
	}
	// Plain Exec does not interpret answers.
	if _, err := l.rt.Exec(ctx, cmds[:1]); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "  ", "show info\nshow stat", "show info; show stat"} {
		if _, err := l.rt.Exec(ctx, []string{bad}); !errors.Is(err, ErrCommand) {
			t.Errorf("Exec(%q) = %v, want ErrCommand", bad, err)
		}
	}
	// The session is still in sync after all this.
	if info, err := l.rt.ShowInfo(ctx); err != nil || info["Name"] != "HAProxy" {
		t.Fatalf("show info after errors: %v %v", info["Name"], err)
	}
}

func TestShowInfoDescription(t *testing.T) {
	l := startLB(t, "    description edge lb one\n")
	info, err := l.rt.ShowInfo(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if info["description"] != "edge lb one" {
		t.Fatalf("description = %q", info["description"])
	}
	if info["Pid"] == "" || info["Version"] == "" {
		t.Fatalf("missing Pid/Version: %v", info)
	}
}

func TestExecManyCommands(t *testing.T) {
	l := startLB(t, "")
	const n = 20000
	cmds := make([]string, n)
	for i := range cmds {
		if i%2 == 0 {
			cmds[i] = "set server be/s2 state ready"
		} else {
			cmds[i] = "set server be/s2 state maint"
		}
	}
	start := time.Now()
	ans, err := l.rt.ExecChecked(testCtx(t), cmds)
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	t.Logf("%d commands in %s (%.1f us/command)", n, el, float64(el.Microseconds())/n)
	if len(ans) != n {
		t.Fatalf("%d answers", len(ans))
	}
	for i, a := range ans {
		if a != "" {
			t.Fatalf("answer %d = %q", i, a)
		}
	}
	if s := l.server(t, "s2"); !s.Maint() {
		t.Fatalf("s2 should end in maint: %+v", s)
	}
}

func TestRuntimeReconnects(t *testing.T) {
	l := startLB(t, "")
	ctx := testCtx(t)
	info1, err := l.rt.ShowInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.proc.Restart(t)
	// The old connection is dead; Exec notices, reconnects once, succeeds.
	info2, err := l.rt.ShowInfo(ctx)
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if info1["Pid"] == info2["Pid"] {
		t.Fatalf("same worker pid %s after restart", info1["Pid"])
	}
	l.proc.Kill(t)
	if _, err := l.rt.Exec(ctx, []string{"show info"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("dead haproxy: %v, want ErrUnavailable", err)
	}
	_ = l.rt.Close()
	if _, err := l.rt.Exec(ctx, []string{"show info"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("closed: %v, want ErrUnavailable", err)
	}
}

// BenchmarkExec measures pipelined Exec throughput for several batch sizes;
// see the ns/command metric.
func BenchmarkExec(b *testing.B) {
	l := startLB(b, "")
	ctx := testCtx(b)
	for _, batch := range []int{1, 100, 1000, 50000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			cmds := make([]string, batch)
			for i := range cmds {
				cmds[i] = fmt.Sprintf("set server be/s%d weight %d", i%4+1, i%200+1)
			}
			iters := 0
			for b.Loop() {
				if _, err := l.rt.Exec(ctx, cmds); err != nil {
					b.Fatal(err)
				}
				iters++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(iters*batch), "ns/command")
		})
	}
}

func TestExecConcurrent(t *testing.T) {
	l := startLB(t, "")
	ctx := testCtx(t)
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 50 {
				cmds := []string{fmt.Sprintf("set server be/s%d weight %d", g%4+1, i+1), fmt.Sprintf("get weight be/s%d", g%4+1)}
				ans, err := l.rt.ExecChecked(ctx, cmds)
				if err == nil && !strings.HasSuffix(ans[1], " (initial 1)") {
					err = fmt.Errorf("get weight answered %q", ans[1])
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// Commands travel joined with ';' in lines of up to lineMax bytes, and the
// answers of large batches are read paced: every answer still belongs to
// its command, wherever lines break.
func TestExecJoinedBatchAttributesErrors(t *testing.T) {
	l := startLB(t, "")
	const n = 3 * paceMin
	cmds := make([]string, n)
	bad := map[int]bool{0: true, 97: true, n / 2: true, n - 1: true}
	for i := range cmds {
		cmds[i] = fmt.Sprintf("set server be/s%d weight %d", i%4+1, i%200+1)
		if bad[i] {
			cmds[i] = fmt.Sprintf("set server be/nosuch%d weight 1", i)
		}
	}
	if lines := strings.Count(string(joinCommands(cmds, lineMax)), "\n"); lines < 2 {
		t.Fatalf("batch fits one line (%d): the test needs several", lines)
	}
	ans, err := l.rt.ExecChecked(testCtx(t), cmds)
	if !errors.Is(err, ErrCommand) || len(ans) != n {
		t.Fatalf("err %v, %d answers", err, len(ans))
	}
	for i, a := range ans {
		if want := bad[i]; want != (a == "No such server.") || (!want && a != "") {
			t.Fatalf("answer %d to %q: %q", i, cmds[i], a)
		}
	}
	got, _ := l.rt.Exec(testCtx(t), []string{"get weight be/s2"})
	if w := fmt.Sprint((n-3)%200 + 1); !strings.HasPrefix(got[0], w+" ") {
		t.Fatalf("be/s2 weight %q, want the last set (%s)", got[0], w)
	}
}
