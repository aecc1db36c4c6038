package haproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// dumpBufSize bounds what a dump reader holds of HAProxy's answer: one
// line at a time, whatever the number of servers. A line of "show servers
// state" is a few hundred bytes at most.
const dumpBufSize = 64 << 10

// dumpTimeout bounds a whole dump when the caller's context has no
// deadline, so that a stuck worker cannot hold up the caller forever. A
// dump of 80,000 servers takes about 100 ms.
const dumpTimeout = time.Minute

// dump reads the answer to one command sent alone, without "prompt", on a
// connection of its own to a worker stats socket: HAProxy answers it,
// ending with an empty line, and closes the connection. A connection of its
// own keeps a long dump from holding up commands sent through a Runtime,
// and lets the answer be read line by line as it comes, never whole.
type dump struct {
	cmd    string // the command, naming it in errors
	ctx    context.Context
	cancel context.CancelFunc
	conn   net.Conn
	stop   func() bool // unregisters the cancellation hook
	r      *bufio.Reader
	blank  bool // the last line read was empty
}

// openDump connects to socketPath and sends cmd, all bounded by ctx (or by
// dumpTimeout when ctx has no deadline) until close. Errors wrap
// ErrUnavailable. The caller must close the dump.
func openDump(ctx context.Context, socketPath, cmd string) (*dump, error) {
	ctx, cancel := WithDefaultTimeout(ctx, dumpTimeout)
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "unix", socketPath)
	if err != nil {
		cancel()
		return nil, unavailable(cmd+": connect", err)
	}
	dl, _ := ctx.Deadline()
	_ = conn.SetDeadline(dl)
	d := &dump{cmd: cmd, ctx: ctx, cancel: cancel, conn: conn}
	// The deadline alone would not see a cancellation: expiring it
	// unblocks a read or write in progress.
	d.stop = context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
		// Wrapped before close, which cancels ctx: ctx.Err() must
		// only name a cancellation or deadline of the caller's.
		err = d.fail("send", err)
		d.close()
		return nil, err
	}
	d.r = bufio.NewReaderSize(conn, dumpBufSize)
	return d, nil
}

// line returns the next line without its newline, as a view of the read
// buffer valid only until the next call: that saves a copy of every line
// of a dump, and the caller copies what it keeps. It returns io.EOF only
// at a clean end (no partial line, see checkEnd for a complete answer),
// io.ErrUnexpectedEOF for a last line without newline, and an error
// wrapping ErrCommand for a line that does not fit the buffer, which no
// dump of HAProxy's produces. Other errors are the socket's: pass them,
// like io.EOF where a line was due, to fail.
func (d *dump) line() ([]byte, error) {
	b, err := d.r.ReadSlice('\n')
	switch {
	case err == nil:
		b = b[:len(b)-1]
		d.blank = len(b) == 0
		return b, nil
	case errors.Is(err, io.EOF) && len(b) == 0:
		return nil, io.EOF
	case errors.Is(err, io.EOF):
		return nil, io.ErrUnexpectedEOF
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, fmt.Errorf("%w: %s: line longer than %d bytes", ErrCommand, d.cmd, dumpBufSize)
	}
	return nil, err
}

// checkEnd, once line has returned io.EOF, tells a complete answer (nil)
// from one cut short, the worker stopping mid-dump say, which ends without
// HAProxy's empty line: that wraps ErrUnavailable, so that a partial dump
// does not pass for a whole one.
func (d *dump) checkEnd() error {
	if !d.blank {
		return d.fail("read", io.ErrUnexpectedEOF)
	}
	return nil
}

// fail wraps an error from line, or of op on the socket, in
// ErrUnavailable, joined with the context's error when that is what broke
// the connection. An error wrapping ErrCommand (a line too long) is
// HAProxy's answer, not the socket's, and is returned as is.
func (d *dump) fail(op string, err error) error {
	if errors.Is(err, ErrCommand) {
		return err
	}
	if cerr := d.ctx.Err(); cerr != nil {
		err = errors.Join(cerr, err)
	}
	return unavailable(d.cmd+": "+op, err)
}

// close drops the connection and releases the timeout.
func (d *dump) close() {
	d.stop()
	_ = d.conn.Close()
	d.cancel()
}
