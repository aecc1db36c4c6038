package haproxy

import (
	"context"
	"strings"
)

// From HAProxy 3.0, `set server B/S addr A port P` is answered before the
// new address is in place: the command publishes the change as an event
// (SERVER_INETADDR), and a task of the worker's (server_atomic_sync, in
// src/server.c) applies it a moment later under thread isolation. Until
// then another connection, served by another thread, still reads the old
// address in `show servers state` and `show stat`, and a client
// connection handled there still goes to it. Seen here on 3.0.11 with two
// threads: a fresh connection read the previous address after 5 to 30 of
// 300 single-change batches (TestAddressChangeSettled); with one thread,
// or on 2.6, never.
//
// So a batch that changes an address is followed by one more round trip
// on the same connection, settleCommand: the worker has run that task by
// the time it answers the next command from the connection (0 stale reads
// in 2,000 batches of one to 1,000 changes, measured the same way), so
// once Exec returns, whoever reads the worker's state (Verify's own
// connections, the server-state file saved before a reload, an operator)
// sees what the batch did. On 2.6 it only costs that round trip (about
// 20 us).
const settleCommand = "set severity-output number" // what connectLocked set: no effect, no output

// changesAddr reports whether cmds change a server's address (and so need
// settling).
func changesAddr(cmds []string) bool {
	for _, c := range cmds {
		if strings.HasPrefix(c, "set server ") && strings.Contains(c, " addr ") {
			return true
		}
	}
	return false
}

// settleLocked sends settleCommand on the current connection. A failure
// is the connection's (the batch was answered, so HAProxy ran it): the
// connection is dropped and the next call reconnects.
func (r *Runtime) settleLocked(ctx context.Context) {
	if r.conn == nil {
		return
	}
	if _, err := r.roundTripLocked(ctx, []string{settleCommand}); err != nil {
		r.log.Debug("settling a batch's address changes failed; reconnecting", "err", err)
		r.dropLocked()
	}
}
