package haproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"
)

// defaultHandshakeTimeout bounds connecting and entering prompt mode when the
// caller's context has no deadline.
const defaultHandshakeTimeout = 5 * time.Second

// inlineWriteMax is the largest batch (in bytes) written without a writer
// goroutine; it is well below a unix socket's send buffer, so the write
// cannot block on HAProxy's answers.
const inlineWriteMax = 16 << 10

// Answer is one runtime API answer with HAProxy's feedback severity.
type Answer struct {
	// Text is the answer with the prompt and the severity prefix removed, trimmed.
	Text string
	// Severity is the syslog severity HAProxy attached to a feedback message
	// (3 error, 4 warning, 6 info, ...), or -1 for plain output such as
	// "show info" or an empty answer.
	Severity int
}

// Failed reports whether the answer is an error report. HAProxy 2.6 tags real
// errors with severity <= 3, but reports a rejected address ("Invalid addr ...")
// with the same warning severity (4) as a successful address change.
func (a Answer) Failed() bool {
	if a.Severity < 0 {
		return false
	}
	if a.Severity <= 3 {
		return true
	}
	return a.Severity == 4 && strings.HasPrefix(a.Text, "Invalid")
}

// Runtime talks to a worker's admin stats socket over one persistent
// connection in prompt mode. It is safe for concurrent use; calls are
// serialised.
type Runtime struct {
	path string
	log  *slog.Logger

	mu     sync.Mutex
	conn   net.Conn
	rd     *answerReader
	closed bool
	// lineMax: the longest request line of commands joined with ';' on
	// this connection, 0 for one command per line (joined.go).
	lineMax int
}

// NewRuntime returns a client for the stats socket at socketPath. It does not
// connect until the first Exec.
func NewRuntime(socketPath string) *Runtime {
	return &Runtime{path: socketPath, log: slog.Default().With("component", "haproxy-runtime", "socket", socketPath)}
}

// Exec sends cmds pipelined over the persistent connection and returns one
// answer per command (prompt stripped, trimmed). It never interprets answers;
// see ExecChecked for that.
func (r *Runtime) Exec(ctx context.Context, cmds []string) ([]string, error) {
	ans, err := r.ExecAnswers(ctx, cmds)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ans))
	for i, a := range ans {
		out[i] = a.Text
	}
	return out, nil
}

// ExecChecked is Exec followed by a check of every answer: when some answers
// report errors it returns all answers and an error joining the first few
// *CommandError values (each wrapping ErrCommand).
func (r *Runtime) ExecChecked(ctx context.Context, cmds []string) ([]string, error) {
	ans, err := r.ExecAnswers(ctx, cmds)
	if err != nil {
		return nil, err
	}
	return checkAnswers(cmds, ans)
}

// checkAnswers returns the answers' texts and an error joining the first
// few *CommandError values for the answers that report errors.
func checkAnswers(cmds []string, ans []Answer) ([]string, error) {
	const maxReported = 16
	out := make([]string, len(ans))
	var errs []error
	failed := 0
	for i, a := range ans {
		out[i] = a.Text
		if a.Failed() {
			failed++
			if len(errs) < maxReported {
				errs = append(errs, &CommandError{Index: i, Command: cmds[i], Answer: a.Text})
			}
		}
	}
	if failed > len(errs) {
		errs = append(errs, fmt.Errorf("%w: %d more failed commands", ErrCommand, failed-len(errs)))
	}
	return out, errors.Join(errs...)
}

// ExecAnswers is Exec returning answers with their severities.
func (r *Runtime) ExecAnswers(ctx context.Context, cmds []string) ([]Answer, error) {
	return r.exec(ctx, cmds, func() ([]Answer, error) { return r.roundTripLocked(ctx, cmds) })
}

// exec validates cmds and runs roundTrip under the lock on a connected
// Runtime, retrying once on a fresh connection when a reused one yields no
// answer at all.
func (r *Runtime) exec(ctx context.Context, cmds []string, roundTrip func() ([]Answer, error)) ([]Answer, error) {
	for i, c := range cmds {
		if err := validCommand(c); err != nil {
			return nil, fmt.Errorf("%w: command %d %q: %w", ErrCommand, i, c, err)
		}
	}
	if len(cmds) == 0 {
		return nil, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, unavailable("exec", net.ErrClosed)
	}
	for attempt := 0; ; attempt++ {
		reused := r.conn != nil
		if !reused {
			if err := r.connectLocked(ctx); err != nil {
				return nil, err
			}
		}
		if len(cmds) >= paceMin {
			r.rd.pace = paceEvery
		}
		ans, err := roundTrip()
		if r.rd != nil {
			r.rd.pace = 0
		}
		if err == nil {
			if c, ok := lastAddrChange(cmds, ans); ok {
				r.settleLocked(ctx, c)
			}
			return ans, nil
		}
		r.dropLocked()
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("%w: exec: %w", ErrUnavailable, errors.Join(ctxErr, err))
		}
		// A reused connection that yields no answer at all was most likely
		// closed by HAProxy while idle (stats timeout) or by a reload: the
		// commands were not executed, so retry once on a fresh connection.
		if reused && len(ans) == 0 && attempt == 0 {
			r.log.Debug("stale runtime connection, reconnecting", "err", err)
			continue
		}
		return nil, unavailable(fmt.Sprintf("exec (%d/%d answers)", len(ans), len(cmds)), err)
	}
}

// Reset drops the connection; the next Exec reconnects. Use it after a reload,
// since the new worker owns the socket.
func (r *Runtime) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropLocked()
}

// Close drops the connection; later calls fail with ErrUnavailable.
func (r *Runtime) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.dropLocked()
	return nil
}

func validCommand(c string) error {
	switch {
	case strings.TrimSpace(c) == "":
		return errors.New("empty command")
	case strings.ContainsAny(c, "\r\n"):
		return errors.New("command contains a newline")
	}
	// HAProxy splits a line on ';' and answers each part separately,
	// which would break the one-answer-per-command framing; a ';' or a
	// space escaped with a backslash is a character of an argument (a
	// map value's: runtimeapi.CLIValue), and a backslash at the end
	// would escape the ';' joinCommands puts after the command.
	for i := 0; i < len(c); i++ {
		switch c[i] {
		case '\\':
			if i == len(c)-1 {
				return errors.New("command ends with a backslash")
			}
			i++
		case ';':
			return errors.New("command contains ';'")
		}
	}
	return nil
}

func (r *Runtime) dropLocked() {
	if r.conn != nil {
		_ = r.conn.Close()
	}
	r.conn, r.rd = nil, nil
}

func (r *Runtime) connectLocked(ctx context.Context) error {
	hctx, cancel := WithDefaultTimeout(ctx, defaultHandshakeTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(hctx, "unix", r.path)
	if err != nil {
		return unavailable("connect", err)
	}
	dl, _ := hctx.Deadline()
	_ = conn.SetDeadline(dl)
	rd := newAnswerReader(conn)
	// "prompt" answers with a bare prompt; "set severity-output number"
	// then prefixes feedback messages with "[N]: ".
	if _, err := conn.Write([]byte("prompt\nset severity-output number\n")); err != nil {
		_ = conn.Close()
		return unavailable("enter prompt mode", err)
	}
	for i := 0; i < 2; i++ {
		if _, err := rd.next(); err != nil {
			_ = conn.Close()
			return unavailable("enter prompt mode", err)
		}
	}
	r.conn, r.rd = conn, rd
	if err := r.learnFramingLocked(hctx); err != nil {
		r.dropLocked()
		return unavailable("read the worker's version", err)
	}
	return nil
}

// roundTripLocked writes all commands (from a goroutine for large batches)
// while reading the answers, so HAProxy never blocks on a full output buffer.
func (r *Runtime) roundTripLocked(ctx context.Context, cmds []string) ([]Answer, error) {
	return r.roundTripBytes(ctx, joinCommands(cmds, r.lineMax), len(cmds))
}

// roundTripBytes writes payload, n commands laid out as HAProxy reads
// them, and reads their n answers.
func (r *Runtime) roundTripBytes(ctx context.Context, payload []byte, n int) ([]Answer, error) {
	conn := r.conn
	dl, _ := ctx.Deadline()
	if err := conn.SetDeadline(dl); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })

	werr := make(chan error, 1)
	if len(payload) <= inlineWriteMax {
		// Small batches fit in the socket buffer: write them inline and
		// save a goroutine hand-off per call.
		_, err := conn.Write(payload)
		werr <- err
	} else {
		go func() {
			_, err := conn.Write(payload)
			werr <- err
		}()
	}

	ans := make([]Answer, 0, n)
	var rerr error
	if len(payload) <= inlineWriteMax {
		if err := <-werr; err != nil {
			stop()
			return nil, fmt.Errorf("write: %w", err)
		}
		werr <- nil
	}
	for range n {
		text, err := r.rd.next()
		if err != nil {
			rerr = err
			_ = conn.Close() // unblocks the writer
			break
		}
		ans = append(ans, parseAnswer(text))
	}
	err := <-werr
	if !stop() && rerr == nil && err == nil {
		// The context ended just as we finished: the answers are complete
		// but the connection's deadline is poisoned, so drop it.
		r.dropLocked()
		return ans, nil
	}
	if rerr != nil {
		return ans, rerr
	}
	if err != nil {
		return ans, fmt.Errorf("write: %w", err)
	}
	return ans, nil
}

// parseAnswer splits an optional "[N]: " severity prefix from the text.
func parseAnswer(text string) Answer {
	if len(text) >= 5 && text[0] == '[' && text[1] >= '0' && text[1] <= '9' && text[2:5] == "]: " {
		return Answer{Text: strings.TrimSpace(text[5:]), Severity: int(text[1] - '0')}
	}
	return Answer{Text: text, Severity: -1}
}

// Batches of at least paceMin commands have their answers read every
// paceEvery instead of as they trickle in (see answerReader.pace): for
// 2,500 commands, tens of reads instead of up to 2,500. HAProxy applies the
// commands whether or not their answers have been read.
const (
	paceMin   = 256
	paceEvery = time.Millisecond
)

// lineMax bounds one request line of commands joined with ';'. HAProxy
// reads a whole line into its request buffer (tune.bufsize, 16 kB by
// default, part of it reserved), so lines stay well below that.
const lineMax = 4 << 10

// joinCommands lays cmds out as request lines of commands joined with ';',
// each of at most max bytes (0: one command per line). Up to 3.0 HAProxy
// runs the parts of a line one after the other and, in prompt mode, ends
// each part's answer with its own prompt, so the one-answer-per-command
// framing holds; it parses one line per wake-up, so joining cuts the cost
// per command several times over one command per line (joined.go: not
// on 3.2).
func joinCommands(cmds []string, max int) []byte {
	size := 0
	for _, c := range cmds {
		size += len(c) + 1
	}
	buf := make([]byte, 0, size)
	line := 0
	for _, c := range cmds {
		if line > 0 && line+1+len(c) > max {
			buf = append(buf, '\n')
			line = 0
		}
		if line > 0 {
			buf = append(buf, ';')
			line++
		}
		buf = append(buf, c...)
		line += len(c)
	}
	return append(buf, '\n')
}
