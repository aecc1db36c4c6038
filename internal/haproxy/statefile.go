package haproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// serversStateCommand is the dump ScanServersState and WriteServersState
// read, through a dump of their own (see openDump).
const serversStateCommand = "show servers state"

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
// The file is for HAProxy to load at a reload or restart, and each line
// goes out with the address and port of the server's health check and
// agent unset (configColumns): HAProxy 2.6 restores those from the file
// over what the new configuration says (measured: a server whose check
// moved from port 10256 to 30147 kept checking 10256 after the reload,
// even with "port" on its own server line), so a check that changed port
// would keep asking the old one for as long as state files carry it over.
// This project states them in the configuration and never changes them at
// runtime: the configuration decides.
//
// It uses a connection of its own, so that a long dump does not hold up
// commands sent through a Runtime. Failures of the socket, and an answer cut
// short (HAProxy ends a complete one with an empty line), wrap
// ErrUnavailable; an answer that is not a version-1 dump wraps ErrCommand.
// A failure of w is returned wrapping only w's error: it says nothing about
// HAProxy. What was written to w before an error is incomplete: write into a
// temporary file and keep it only on success.
func WriteServersState(ctx context.Context, socketPath string, w io.Writer, filter ServersStateFilter) error {
	return streamServersState(ctx, socketPath, serversStateCommand, w, filter)
}

// streamServersState is WriteServersState with the command as a parameter,
// so tests can make HAProxy answer with an error ("show servers state
// <unknown backend>").
func streamServersState(ctx context.Context, socketPath, cmd string, w io.Writer, filter ServersStateFilter) error {
	d, err := openDump(ctx, socketPath, cmd)
	if err != nil {
		return err
	}
	defer d.close()

	version, err := d.line()
	if err != nil {
		return d.fail("read", err)
	}
	if string(bytes.TrimSpace(version)) != "1" {
		// Not a dump: most likely an error message, which the first line
		// carries.
		return fmt.Errorf("%w: show servers state: unsupported format version or error %q", ErrCommand, stateFileClip(version))
	}
	// Lines are views of the read buffer: copying them into a bounded
	// write buffer keeps the cost per line to that one copy.
	bw := bufio.NewWriterSize(w, dumpBufSize)
	writeLine := func(line []byte) error {
		if _, err := bw.Write(line); err != nil {
			return err
		}
		return bw.WriteByte('\n')
	}
	if err := writeLine(version); err != nil {
		return fmt.Errorf("show servers state: write: %w", err)
	}
	header, err := d.line()
	if err != nil {
		return d.fail("read", err)
	}
	if !bytes.HasPrefix(header, []byte("#")) {
		return fmt.Errorf("%w: show servers state: missing header, got %q", ErrCommand, stateFileClip(header))
	}
	var keep func([]byte) bool
	if filter != nil {
		keep = filter(string(header))
	}
	unset := configColumns(string(header))
	if err := writeLine(header); err != nil {
		return fmt.Errorf("show servers state: write: %w", err)
	}

	for {
		line, err := d.line()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return d.fail("read", err)
		}
		if len(line) == 0 || keep != nil && !keep(line) {
			continue
		}
		if err := writeLine(unset(line)); err != nil {
			return fmt.Errorf("show servers state: write: %w", err)
		}
	}
	// An answer cut short fails, even though part of it is written: the
	// caller must not let a short file replace a complete one.
	if err := d.checkEnd(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("show servers state: write: %w", err)
	}
	return nil
}

// configColumns returns, for the "#" header of a dump, the rewrite of a
// server line that unsets the columns HAProxy would restore over the
// configuration: srv_check_port and srv_agent_port become 0,
// srv_check_addr and srv_agent_addr "-", as HAProxy writes them for a
// server that has none. A line with nothing to unset comes back as it is;
// a rewrite is in a buffer reused for the next line. Columns the header
// lacks are left alone.
func configColumns(header string) func(line []byte) []byte {
	type column struct {
		i     int
		unset []byte
	}
	var cols []column
	for i, c := range strings.Fields(strings.TrimPrefix(header, "#")) {
		switch c {
		case "srv_check_port", "srv_agent_port":
			cols = append(cols, column{i, []byte("0")})
		case "srv_check_addr", "srv_agent_addr":
			cols = append(cols, column{i, []byte("-")})
		}
	}
	// Reused from line to line: nothing is allocated per line once they
	// have grown.
	var fields [][]byte
	var out []byte
	return func(line []byte) []byte {
		fields = AppendFields(fields[:0], line)
		changed := false
		for _, c := range cols {
			if c.i < len(fields) && !bytes.Equal(fields[c.i], c.unset) {
				fields[c.i] = c.unset
				changed = true
			}
		}
		if !changed {
			return line
		}
		out = out[:0]
		for i, f := range fields {
			if i > 0 {
				out = append(out, ' ')
			}
			out = append(out, f...)
		}
		return out
	}
}

// stateFileClip shortens text quoted in an error message.
func stateFileClip(b []byte) string {
	const n = 200
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
