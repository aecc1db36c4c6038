package haproxy

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// ExecCheckedUntil answers every command in order when not stopped, and
// sends nothing past the window in which stop first says true.
func TestExecCheckedUntil(t *testing.T) {
	l := startLB(t, "")
	const window, n = 100, 450
	cmds := make([]string, n)
	for i := range cmds {
		cmds[i] = fmt.Sprintf("set server be/s2 weight %d", i%250+1)
	}
	cmds[n/2] = "set server be/nosuch weight 1"

	ans, err := l.rt.ExecCheckedUntil(testCtx(t), cmds, window, func() bool { return false })
	var ce *CommandError
	if len(ans) != n || !errors.As(err, &ce) || ce.Index != n/2 {
		t.Fatalf("%d answers, err %v; want %d and a CommandError at %d", len(ans), err, n, n/2)
	}
	if got, _ := l.rt.Exec(testCtx(t), []string{"get weight be/s2"}); !strings.HasPrefix(got[0], fmt.Sprint((n-1)%250+1)+" ") {
		t.Fatalf("weight %q after the whole batch", got[0])
	}

	asked := 0
	ans, err = l.rt.ExecCheckedUntil(testCtx(t), cmds[:n/2], window, func() bool { asked++; return asked > 1 })
	if err != nil || len(ans) < window || len(ans) >= n/2 {
		t.Fatalf("stopped batch: %d answers, %v; want at least one window (%d) and fewer than %d", len(ans), err, window, n/2)
	}
	if got, _ := l.rt.Exec(testCtx(t), []string{"get weight be/s2"}); !strings.HasPrefix(got[0], fmt.Sprint((len(ans)-1)%250+1)+" ") {
		t.Fatalf("weight %q: commands past the %d answered ones ran", got[0], len(ans))
	}
}
