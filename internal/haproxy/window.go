package haproxy

import (
	"context"
	"fmt"
	"time"
)

// ExecCheckedUntil is ExecChecked for a long batch that the caller may
// want to cut short: it keeps at most window commands sent but not yet
// answered, and before sending more it asks stop; once stop says true it
// sends nothing more. HAProxy always has up to window commands queued, so
// it never waits for the client between them, yet a stop takes effect
// within one window. It returns the answers of the commands sent, a
// prefix of cmds (all of them unless stopped), checked as ExecChecked
// checks them.
func (r *Runtime) ExecCheckedUntil(ctx context.Context, cmds []string, window int, stop func() bool) ([]string, error) {
	window = max(window, 1)
	ans, err := r.exec(ctx, cmds, func() ([]Answer, error) { return r.windowLocked(ctx, cmds, window, stop) })
	if err != nil {
		return nil, err
	}
	return checkAnswers(cmds, ans)
}

// windowLocked sends cmds window by window, reading answers in between.
func (r *Runtime) windowLocked(ctx context.Context, cmds []string, window int, stop func() bool) ([]Answer, error) {
	conn := r.conn
	dl, _ := ctx.Deadline()
	if err := conn.SetDeadline(dl); err != nil {
		return nil, err
	}
	cancelled := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer cancelled()
	ans := make([]Answer, 0, len(cmds))
	sent, stopped := 0, false
	for len(ans) < sent || (sent < len(cmds) && !stopped) {
		if sent < len(cmds) && !stopped && sent-len(ans) < window {
			if sent > 0 && stop() {
				stopped = true
				continue
			}
			n := min(len(cmds)-sent, window-(sent-len(ans)))
			if _, err := conn.Write(joinCommands(cmds[sent:sent+n], r.lineMax)); err != nil {
				return ans, fmt.Errorf("write: %w", err)
			}
			sent += n
			continue
		}
		text, err := r.rd.next()
		if err != nil {
			return ans, err
		}
		ans = append(ans, parseAnswer(text))
	}
	return ans, nil
}
