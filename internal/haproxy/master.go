package haproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// defaultMasterTimeout bounds a master command (retries included) when
	// the caller's context has no deadline.
	defaultMasterTimeout = 10 * time.Second
	retryMin             = 2 * time.Millisecond
	retryMax             = 50 * time.Millisecond
	reloadPoll           = 5 * time.Millisecond
)

// Master talks to the master CLI socket, one connection per command.
type Master struct {
	path string
	log  *slog.Logger
}

// NewMaster returns a client for the master CLI socket at socketPath
// (the -S argument of haproxy).
func NewMaster(socketPath string) *Master {
	return &Master{path: socketPath, log: slog.Default().With("component", "haproxy-master", "socket", socketPath)}
}

// Command sends cmd, half-closes the connection and reads the answer to EOF.
// While the master re-executes (during a reload) it refuses or resets
// connections: those are retried with a short bounded backoff until ctx ends
// (or 10s when ctx has no deadline). Errors wrap ErrUnavailable.
func (m *Master) Command(ctx context.Context, cmd string) (string, error) {
	out, _, err := m.command(ctx, cmd)
	return out, err
}

// command also reports whether the command reached the master, in which case
// it was not retried (a "reload" must not be sent twice).
func (m *Master) command(ctx context.Context, cmd string) (string, bool, error) {
	if err := validCommand(cmd); err != nil {
		return "", false, fmt.Errorf("%w: %q: %w", ErrCommand, cmd, err)
	}
	ctx, cancel := WithDefaultTimeout(ctx, defaultMasterTimeout)
	defer cancel()
	// "reload" must never be sent twice: once written, any failure is final.
	f := strings.Fields(cmd)
	idempotent := f[0] != "reload"
	wait := retryMin
	for attempt := 1; ; attempt++ {
		out, sent, err := m.once(ctx, cmd, idempotent)
		if err == nil {
			return out, true, nil
		}
		if sent || !retryable(err) {
			return "", sent, unavailable("master "+strconv.Quote(cmd), err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", false, unavailable(fmt.Sprintf("master %q after %d attempts", cmd, attempt), errors.Join(ctx.Err(), err))
		case <-t.C:
		}
		wait = min(2*wait, retryMax)
	}
}

// retryable reports the errors seen while the master re-executes.
func retryable(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.EAGAIN) ||
		errors.Is(err, os.ErrNotExist) || errors.Is(err, io.ErrUnexpectedEOF)
}

func (m *Master) once(ctx context.Context, cmd string, idempotent bool) (out string, sent bool, err error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", m.path)
	if err != nil {
		return "", false, err
	}
	conn := c.(*net.UnixConn)
	defer conn.Close()
	dl, _ := ctx.Deadline()
	_ = conn.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Write([]byte(cmd + "\n")); err != nil {
		return "", false, err
	}
	if err := conn.CloseWrite(); err != nil {
		return "", false, err
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		// A reset before any byte arrived: the master most likely went
		// away before reading the command (it is re-executing); retry
		// commands that are safe to repeat.
		if idempotent && len(b) == 0 && errors.Is(err, syscall.ECONNRESET) {
			return "", false, err
		}
		return "", true, err
	}
	return strings.TrimSpace(string(b)), true, nil
}

// Proc is the parsed output of the master's "show proc".
type Proc struct {
	MasterPID  int
	Version    Version // the master's (its line's last column); zero if absent
	Reloads    int     // reloads since start, failed ones included
	Failed     int     // consecutive failed reloads; back to 0 after a successful one
	Workers    []int   // current worker PIDs
	OldWorkers []int   // workers still finishing after a reload
}

// ShowProc runs "show proc" on the master.
func (m *Master) ShowProc(ctx context.Context) (Proc, error) {
	out, err := m.Command(ctx, "show proc")
	if err != nil {
		return Proc{}, err
	}
	return ParseProc(out)
}

// ParseProc parses HAProxy 2.6's "show proc":
//
//	#<PID>          <type>          <reloads>       <uptime>        <version>
//	7524            master          1 [failed: 0]   0d00h00m19s     2.6.12-1+deb12u4
//	# workers
//	9555            worker          0               0d00h00m00s     2.6.12-1+deb12u4
//	# old workers
//	7526            worker          1               0d00h00m19s     2.6.12-1+deb12u4
//	# programs
func ParseProc(out string) (Proc, error) {
	var p Proc
	section := ""
	seenMaster := false
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#<"):
			continue
		case strings.HasPrefix(line, "#"):
			section = strings.TrimSpace(strings.TrimPrefix(line, "#"))
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil || pid <= 0 { // found by FuzzRuntimeParsers: a PID 0 read as a master
			if err == nil {
				err = errors.New("not a PID")
			}
			return Proc{}, fmt.Errorf("%w: show proc: bad pid in %q", ErrCommand, line)
		}
		switch {
		case f[1] == "master":
			if p.Reloads, err = strconv.Atoi(f[2]); err != nil || p.Reloads < 0 {
				return Proc{}, fmt.Errorf("%w: show proc: bad reload count in %q", ErrCommand, line)
			}
			if len(f) >= 5 && f[3] == "[failed:" {
				if p.Failed, err = strconv.Atoi(strings.TrimSuffix(f[4], "]")); err != nil || p.Failed < 0 {
					return Proc{}, fmt.Errorf("%w: show proc: bad failed count in %q", ErrCommand, line)
				}
			}
			p.MasterPID, seenMaster = pid, true
			if v, err := ParseVersion(f[len(f)-1]); err == nil && len(f) >= 4 {
				p.Version = v
			}
		case f[1] == "worker" && section == "workers":
			p.Workers = append(p.Workers, pid)
		case f[1] == "worker" && section == "old workers":
			p.OldWorkers = append(p.OldWorkers, pid)
		}
	}
	if !seenMaster {
		return Proc{}, fmt.Errorf("%w: show proc: no master line in %q", ErrCommand, out)
	}
	return p, nil
}

// Reload is ReloadReport without the report: nil once the reload is
// confirmed, else why not.
func (m *Master) Reload(ctx context.Context) error {
	_, err := m.ReloadReport(ctx)
	return err
}

// ReloadReport asks the master to reload and waits until it has. A master of 2.7
// or newer answers the reload itself (synchronous reload: `Success=1`,
// nil; `Success=0`, an error wrapping ErrReloadFailed with the startup
// logs' alerts, also in the result's Log; 3.1+ refusing a reload while one
// is loading, ErrReloadInProgress). A 2.6 master answers nothing: the
// reload counter of `show proc` rising with a new worker listed is success,
// its failed counter rising is ErrReloadFailed (the previous worker keeps
// serving either way). It polls `show proc` every few milliseconds until
// ctx ends (10s when ctx has no deadline).
func (m *Master) ReloadReport(ctx context.Context) (ReloadResult, error) {
	ctx, cancel := WithDefaultTimeout(ctx, defaultMasterTimeout)
	defer cancel()
	start := time.Now()
	before, err := m.ShowProc(ctx)
	if err != nil {
		return ReloadResult{}, err
	}
	res := ReloadResult{Version: before.Version}
	out, sent, err := m.command(ctx, "reload")
	if err != nil && !sent {
		return res, err
	}
	if err == nil && before.Version.SyncReload() {
		ok, log, perr := ParseReloadAnswer(out)
		switch {
		case perr == nil:
			res.Answered, res.Log = true, log
			if !ok {
				return res, &ReloadError{Answered: true, Reason: reasons(res)}
			}
			m.log.Debug("reload done", "version", before.Version.Text, "elapsed", time.Since(start))
			return m.newWorkers(ctx, res), nil
		case errors.Is(perr, ErrReloadInProgress):
			return res, perr
		}
		// The answer did not arrive whole (the master re-executing cut
		// it): show proc still tells.
		m.log.Warn("unexpected answer to reload, confirming with show proc", "version", before.Version.Text, "err", perr)
	}
	if err := m.confirmReload(ctx, before, start); err != nil {
		return res, err
	}
	return m.newWorkers(ctx, res), nil
}

// newWorkers notes in res the workers `show proc` lists once a reload is
// confirmed. A 2.7+ master answers before the previous worker has stopped
// listening, so for a moment either worker may answer on the stats socket:
// the new ones are these. Left nil when the master does not answer.
func (m *Master) newWorkers(ctx context.Context, res ReloadResult) ReloadResult {
	if p, err := m.ShowProc(ctx); err == nil {
		res.Workers = p.Workers
	}
	return res
}

// confirmReload polls `show proc` until the reload counter rose with a new
// worker listed (nil) or the failed counter rose (ErrReloadFailed).
func (m *Master) confirmReload(ctx context.Context, before Proc, start time.Time) error {
	// 2.6 answers "reload" with nothing (or drops the connection while
	// re-executing): the outcome is only visible in "show proc".
	var last Proc
	var lastErr error
	for polls := 1; ; polls++ {
		p, err := m.ShowProc(ctx)
		if err == nil {
			last, lastErr = p, nil
			switch {
			case p.Failed > before.Failed:
				return &ReloadError{Before: before.Reloads, After: p.Reloads, Failed: p.Failed}
			case p.Reloads > before.Reloads && hasNewWorker(before.Workers, p.Workers):
				m.log.Debug("reload done", "reloads", p.Reloads, "workers", p.Workers,
					"polls", polls, "elapsed", time.Since(start))
				return nil
			}
		} else {
			lastErr = err
		}
		t := time.NewTimer(reloadPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: reload not confirmed after %s (reloads %d -> %d, failed %d, last error %v): %w",
				ErrUnavailable, time.Since(start).Round(time.Millisecond), before.Reloads, last.Reloads, last.Failed, lastErr, ctx.Err())
		case <-t.C:
		}
	}
}

func hasNewWorker(old, cur []int) bool {
	for _, pid := range cur {
		if !slices.Contains(old, pid) {
			return true
		}
	}
	return false
}
