package haproxy

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
)

func scanAll(t testing.TB, socket string) []ServerState {
	t.Helper()
	var rows []ServerState
	if err := ScanServersState(testCtx(t), socket, func(s ServerState) error {
		rows = append(rows, s)
		return nil
	}); err != nil {
		t.Fatalf("scan: %v", err)
	}
	return rows
}

// The scan yields what "show servers state" through the prompt-mode client
// parses to, including states changed at runtime.
func TestScanServersStateMatchesParse(t *testing.T) {
	l := startLB(t, "")
	l.useSlot(t, "s2", greeter(t, "x"))
	if _, err := l.rt.ExecChecked(testCtx(t), []string{"set server be/s3 state drain"}); err != nil {
		t.Fatal(err)
	}
	// s2 comes up when its check passes: compare once it has (a read on
	// each side of that moment differed, seen on 3.0 under load).
	var want []ServerState
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if want, err = l.rt.ShowServersState(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		if len(want) > 1 && want[1].OpState == 2 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("s2 not up within 10s: %+v", want)
		}
	}
	// The other servers' checks fail on their own time (s3, drained,
	// goes down after s2 is up): a scan counts against the parses on each
	// side of it when they agree, taken again (bounded) while a check
	// changes a state between them.
	for try := 1; ; try++ {
		got := scanAll(t, l.proc.StatsSocket)
		after, err := l.rt.ShowServersState(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(after, want) && try < 20 {
			want = after
			continue
		}
		if len(got) != 4 || !reflect.DeepEqual(got, want) {
			t.Fatalf("scan\n%+v\nparse\n%+v", got, want)
		}
		return
	}
}

// Rows of a large dump come in order, with names that do not point into
// the read buffer, and the scan allocates a small fraction of the dump.
func TestScanServersStateLarge(t *testing.T) {
	const backends, slots = 2000, 8
	p := startSlots(t, backends, slots)
	rows := scanAll(t, p.StatsSocket)
	if len(rows) != backends*slots {
		t.Fatalf("%d rows, want %d", len(rows), backends*slots)
	}
	for i, r := range rows {
		be, srv := fmt.Sprintf("be%d", i/slots), fmt.Sprintf("s%d", i%slots+1)
		if r.Backend != be || r.Server != srv {
			t.Fatalf("row %d is %s/%s, want %s/%s", i, r.Backend, r.Server, be, srv)
		}
		if i%slots > 0 && unsafe.StringData(r.Backend) != unsafe.StringData(rows[i-1].Backend) {
			t.Fatalf("row %d: backend name not shared with the previous row", i)
		}
		if i >= slots && unsafe.StringData(r.Server) != unsafe.StringData(rows[i-slots].Server) {
			t.Fatalf("row %d: server name not shared across backends", i)
		}
	}

	prt := NewRuntime(p.StatsSocket)
	defer prt.Close()
	dump, err := prt.ExecChecked(testCtx(t), []string{"show servers state"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n := 0
	if err := ScanServersState(ctx, p.StatsSocket, func(ServerState) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("dump %d bytes, %d rows: scan allocated %d bytes in %d objects", len(dump[0]), n, alloc, after.Mallocs-before.Mallocs)
	if limit := uint64(len(dump[0]) / 8); alloc > limit {
		t.Fatalf("scan allocated %d bytes, want at most %d (an eighth of the dump)", alloc, limit)
	}
}

func TestScanServersStateErrors(t *testing.T) {
	l := startLB(t, "")
	stop := errors.New("stop")
	calls := 0
	err := ScanServersState(testCtx(t), l.proc.StatsSocket, func(ServerState) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Fatalf("callback error: got %v after %d calls, want it as is after 1", err, calls)
	}
	err = ScanServersState(testCtx(t), filepath.Join(t.TempDir(), "none.sock"), func(ServerState) error { return nil })
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("missing socket: %v, want ErrUnavailable", err)
	}
}

// ScanServersState shares the framing checks of WriteServersState: an
// answer cut short is ErrUnavailable, a line too long ErrCommand.
func TestScanServersStateCutShort(t *testing.T) {
	const head = "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port\n"
	const row = "1 be 1 s1 127.0.0.1 2 0 1 1 0 6 3 4 6 0 0 0 - 8080\n"
	for name, tc := range map[string]struct {
		answer string
		rows   int
		want   error
	}{
		"complete":      {head + row + "\n", 1, nil},
		"no end":        {head + row, 1, ErrUnavailable},
		"half a line":   {head + row[:10], 0, ErrUnavailable},
		"nothing":       {"", 0, ErrUnavailable},
		"line too long": {head + strings.Repeat("x", dumpBufSize+1) + "\n\n", 0, ErrCommand},
	} {
		t.Run(name, func(t *testing.T) {
			rows := 0
			err := ScanServersState(testCtx(t), playback(t, tc.answer), func(ServerState) error { rows++; return nil })
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) || rows != tc.rows {
				t.Fatalf("got %v after %d rows, want %v after %d", err, rows, tc.want, tc.rows)
			}
		})
	}
}
