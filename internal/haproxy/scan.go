package haproxy

import (
	"context"
	"errors"
	"io"
	"strings"
	"unsafe"
)

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
	d, err := openDump(ctx, socketPath, serversStateCommand)
	if err != nil {
		return err
	}
	defer d.close()

	b, err := d.line()
	if err != nil {
		return d.fail("read", err)
	}
	version := string(b) // a copy: quoted in an error, maybe
	b, err = d.line()
	if err != nil {
		return d.fail("read", err)
	}
	cols, err := parseStateHead(version, lineView(b))
	if err != nil {
		return err
	}
	var (
		fieldBuf [32]string
		backend  string                    // the last backend's name (owned)
		names    = make(map[string]string) // server names seen (owned)
	)
	for lineNo := 3; ; lineNo++ {
		b, err := d.line()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return d.fail("read", err)
		}
		line := lineView(b)
		if line == "" || line[0] == '#' {
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
	return d.checkEnd()
}

// lineView returns b as a string without copying it: parsing a row from the
// read buffer costs no copy of the line, and the caller copies what it
// keeps before the buffer is reused. unsafe.SliceData keeps an empty line
// valid.
func lineView(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
