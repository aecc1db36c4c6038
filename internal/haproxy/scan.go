package haproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
	"unsafe"
)

// scanBufSize bounds what ScanServersState holds of HAProxy's answer: one
// line at a time, a few hundred bytes, in a buffer of this size.
const scanBufSize = 64 << 10

// scanTimeout bounds a whole scan when the caller's context has no
// deadline. A dump of 80,000 servers takes about 100 ms.
const scanTimeout = time.Minute

// scanInternMax bounds the server names ScanServersState shares between
// rows. Slot names (s1, s2, ...) are few; a config with a unique name per
// server just gets copies past that.
const scanInternMax = 4096

// ScanServersState runs "show servers state" (format 1) on a connection of
// its own to the worker stats socket at socketPath and calls fn for each
// row, in HAProxy's order (backend by backend, servers in configuration
// order). It never holds more than a line of the answer, which is
// megabytes at tens of thousands of servers, and allocates nothing per row
// but names it has not seen: the Backend and Server strings of a row are
// copies that fn may keep (rows of one backend share one copy of its name,
// and server names are shared across backends), not views of the read
// buffer.
//
// The command is sent without "prompt": HAProxy answers it, ending with an
// empty line, and closes the connection. An answer cut short, and socket
// failures, wrap ErrUnavailable; an answer that is not a version-1 dump, or
// a row that does not parse, wraps ErrCommand. An error returned by fn
// stops the scan and is returned as is.
func ScanServersState(ctx context.Context, socketPath string, fn func(ServerState) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, scanTimeout)
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
	// Cancellation unblocks a read in progress.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	sockErr := func(err error) error {
		if cerr := ctx.Err(); cerr != nil {
			err = errors.Join(cerr, err)
		}
		return unavailable("show servers state: read", err)
	}
	if _, err := io.WriteString(conn, "show servers state\n"); err != nil {
		return sockErr(err)
	}

	s := rowScanner{r: bufio.NewReaderSize(conn, scanBufSize)}
	version, err := s.line()
	if err != nil {
		return sockErr(err)
	}
	version = strings.Clone(version) // quoted in an error, maybe
	header, err := s.line()
	if err != nil {
		return sockErr(err)
	}
	cols, err := parseStateHead(version, header)
	if err != nil {
		return err
	}
	var (
		fieldBuf [32]string
		backend  string                    // the last backend's name (owned)
		names    = make(map[string]string) // server names seen (owned)
		complete bool                      // the last line was empty
	)
	for lineNo := 3; ; lineNo++ {
		line, err := s.line()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sockErr(err)
		}
		// HAProxy ends a complete answer with an empty line and closes;
		// end of file without it means the worker went away mid-dump.
		complete = line == ""
		if complete || line[0] == '#' {
			continue
		}
		row, err := cols.parseRow(line, lineNo, fieldBuf[:0])
		if err != nil {
			// Parse again from a copy: the error may quote the line,
			// which must not point into the buffer.
			_, err = cols.parseRow(strings.Clone(line), lineNo, fieldBuf[:0])
			return err
		}
		if row.Backend != backend {
			backend = strings.Clone(row.Backend)
		}
		row.Backend = backend
		name, ok := names[row.Server]
		if !ok {
			name = strings.Clone(row.Server)
			if len(names) < scanInternMax {
				names[name] = name
			}
		}
		row.Server = name
		if err := fn(row); err != nil {
			return err
		}
	}
	if !complete {
		return sockErr(io.ErrUnexpectedEOF)
	}
	return nil
}

// rowScanner reads newline-terminated lines from a bounded buffer.
type rowScanner struct{ r *bufio.Reader }

// line returns the next line without its newline. The string is a view of
// the read buffer, valid only until the next call: it saves a copy of
// every line of a dump, and the caller copies what it keeps. It returns
// io.EOF only at a clean end (no partial line), io.ErrUnexpectedEOF for a
// last line without newline.
func (s rowScanner) line() (string, error) {
	b, err := s.r.ReadSlice('\n')
	switch {
	case err == nil:
		b = b[:len(b)-1]
		if len(b) == 0 {
			return "", nil
		}
		return unsafe.String(&b[0], len(b)), nil
	case errors.Is(err, io.EOF) && len(b) == 0:
		return "", io.EOF
	case errors.Is(err, io.EOF):
		return "", io.ErrUnexpectedEOF
	case errors.Is(err, bufio.ErrBufferFull):
		return "", fmt.Errorf("%w: show servers state: line longer than %d bytes", ErrCommand, scanBufSize)
	}
	return "", err
}
