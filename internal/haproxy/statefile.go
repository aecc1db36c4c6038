package haproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// stateFileBufSize bounds what WriteServersState holds of HAProxy's answer:
// one buffer for reading and one for writing, whatever the number of
// servers. A line of "show servers state" is a few hundred bytes at most.
const stateFileBufSize = 64 << 10

// stateFileTimeout bounds a whole dump when the caller's context has no
// deadline, so that a stuck worker cannot hold up the caller forever. A dump
// of 80,000 servers takes about 100 ms.
const stateFileTimeout = time.Minute

// stateFileCommand is the dump; sent alone on a connection, without
// "prompt", HAProxy answers it and closes the connection.
const stateFileCommand = "show servers state"

// ServersStateFilter builds, from the "#" header line of "show servers
// state", the decision for each server line: keep returns whether the line
// goes out. keep gets the line without its newline, in a buffer reused for
// the next line (it must not keep it). A nil keep keeps every line.
type ServersStateFilter func(header string) (keep func(line []byte) bool)

// WriteServersState streams "show servers state" (format 1) from the worker
// stats socket at socketPath to w, line by line, through filter (nil keeps
// every line): the version and header lines, then each server line kept,
// each ending with a newline. It never holds the whole answer, which is
// megabytes at tens of thousands of servers, so the dump costs a bounded
// amount of memory.
//
// It uses a connection of its own, so that a long dump does not hold up
// commands sent through a Runtime. Failures of the socket, and an answer cut
// short (HAProxy ends a complete one with an empty line), wrap
// ErrUnavailable; an answer that is not a version-1 dump wraps ErrCommand.
// A failure of w is returned wrapping only w's error: it says nothing about
// HAProxy. What was written to w before an error is incomplete: write into a
// temporary file and keep it only on success.
func WriteServersState(ctx context.Context, socketPath string, w io.Writer, filter ServersStateFilter) error {
	return streamServersState(ctx, socketPath, stateFileCommand, w, filter)
}

// streamServersState is WriteServersState with the command as a parameter,
// so tests can make HAProxy answer with an error ("show servers state
// <unknown backend>").
func streamServersState(ctx context.Context, socketPath, cmd string, w io.Writer, filter ServersStateFilter) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, stateFileTimeout)
		defer cancel()
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return unavailable("show servers state: connect", err)
	}
	defer conn.Close()
	dl, _ := ctx.Deadline()
	_ = conn.SetDeadline(dl)
	// Cancellation unblocks a read or write in progress.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	sockErr := func(op string, err error) error {
		if errors.Is(err, errStateLineTooLong) {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			err = errors.Join(cerr, err)
		}
		return unavailable("show servers state: "+op, err)
	}
	if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
		return sockErr("send", err)
	}

	s := stateFileScanner{r: bufio.NewReaderSize(conn, stateFileBufSize)}
	version, err := s.line()
	if err != nil {
		return sockErr("read", err)
	}
	if string(bytes.TrimSpace(version)) != "1" {
		// Not a dump: most likely an error message, which the first line
		// carries.
		return fmt.Errorf("%w: show servers state: unsupported format version or error %q", ErrCommand, stateFileClip(version))
	}
	bw := bufio.NewWriterSize(w, stateFileBufSize)
	writeLine := func(line []byte) error {
		if _, err := bw.Write(line); err != nil {
			return err
		}
		return bw.WriteByte('\n')
	}
	if err := writeLine(version); err != nil {
		return fmt.Errorf("show servers state: write: %w", err)
	}
	header, err := s.line()
	if err != nil {
		return sockErr("read", err)
	}
	if !bytes.HasPrefix(header, []byte("#")) {
		return fmt.Errorf("%w: show servers state: missing header, got %q", ErrCommand, stateFileClip(header))
	}
	var keep func([]byte) bool
	if filter != nil {
		keep = filter(string(header))
	}
	if err := writeLine(header); err != nil {
		return fmt.Errorf("show servers state: write: %w", err)
	}

	// HAProxy ends the answer with an empty line and then closes the
	// connection; end of file without that empty line means the answer was
	// cut short (the worker stopped, say), and a short file must not
	// replace a complete one.
	complete := false
	for {
		line, err := s.line()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sockErr("read", err)
		}
		if len(line) == 0 {
			complete = true
			continue
		}
		complete = false
		if keep != nil && !keep(line) {
			continue
		}
		if err := writeLine(line); err != nil {
			return fmt.Errorf("show servers state: write: %w", err)
		}
	}
	if !complete {
		return sockErr("read", io.ErrUnexpectedEOF)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("show servers state: write: %w", err)
	}
	return nil
}

// errStateLineTooLong: a line does not fit the buffer, which no dump of
// HAProxy's produces.
var errStateLineTooLong = fmt.Errorf("%w: show servers state: line longer than %d bytes", ErrCommand, stateFileBufSize)

// stateFileScanner reads newline-terminated lines from a bounded buffer.
type stateFileScanner struct{ r *bufio.Reader }

// line returns the next line without its newline, valid until the next
// call; io.EOF only at a clean end (no partial line), io.ErrUnexpectedEOF
// for a last line without newline.
func (s stateFileScanner) line() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	switch {
	case err == nil:
		return line[:len(line)-1], nil
	case errors.Is(err, io.EOF) && len(line) == 0:
		return nil, io.EOF
	case errors.Is(err, io.EOF):
		return nil, io.ErrUnexpectedEOF
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, errStateLineTooLong
	}
	return nil, err
}

// stateFileClip shortens text quoted in an error message.
func stateFileClip(b []byte) string {
	const n = 200
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
