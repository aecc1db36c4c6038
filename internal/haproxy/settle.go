package haproxy

import (
	"context"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// From HAProxy 3.0, `set server B/S addr A port P` is answered before the
// new address is in place: the command publishes the change as an event
// (SERVER_INETADDR), and a task of the worker's (server_atomic_sync, in
// src/server.c) applies it a moment later under thread isolation. Until
// then another connection, served by another thread, still reads the old
// address in `show servers state` and `show stat`, and a client
// connection handled there still goes to it. Seen here with two threads:
// a fresh connection read the previous address after 5 to 30 of 300
// single-change batches on 3.0.11, 11 on 3.2.26
// (TestAddressChangeSettled); with one thread, or on 2.6, never.
//
// So after a batch that changes addresses, the client reads the last
// change back on the same connection (`show servers state B`) until it
// shows, a few times at most: the task applies the changes in the order
// they were made, so once the last one shows, so do the others, for every
// thread. Once Exec returns, whoever reads the worker's state (Verify's
// own connections, the server-state file saved before a reload, an
// operator) sees what the batch did. On 2.6, which applies the address
// at once, it costs that one read; on 3.0 one more round trip was already
// enough (0 stale in 2,000 batches), on 3.2 it was not (the task may run
// on another thread).
const (
	settleReads = 50                   // reads at most
	settleWait  = 2 * time.Millisecond // between two reads
)

// addrChange is one `set server B/S addr A [port P]` command.
type addrChange struct {
	backend, server string
	addr            netip.Addr
	port            int // 0: not given
}

// parseAddrChange reads cmd as an address change (false for any other
// command, or an address that is not an IP).
func parseAddrChange(cmd string) (addrChange, bool) {
	f := strings.Fields(cmd)
	if len(f) < 5 || f[0] != "set" || f[1] != "server" || f[3] != "addr" {
		return addrChange{}, false
	}
	be, srv, ok := strings.Cut(f[2], "/")
	addr, err := netip.ParseAddr(f[4])
	if !ok || err != nil {
		return addrChange{}, false
	}
	c := addrChange{backend: be, server: srv, addr: addr.Unmap()}
	if len(f) >= 7 && f[5] == "port" {
		if p, err := strconv.Atoi(f[6]); err == nil {
			c.port = p
		}
	}
	return c, true
}

// lastAddrChange is the last command of cmds that changed an address and
// was answered without error (false: none).
func lastAddrChange(cmds []string, ans []Answer) (addrChange, bool) {
	for i := min(len(cmds), len(ans)) - 1; i >= 0; i-- {
		if c, ok := parseAddrChange(cmds[i]); ok && !ans[i].Failed() {
			return c, true
		}
	}
	return addrChange{}, false
}

// settleLocked reads c's server back on the current connection until it
// shows c's address, at most settleReads times. A failure is the
// connection's (the batch was answered, so HAProxy ran it): the
// connection is dropped and the next call reconnects. Not settled in time
// (a loaded worker): logged, the batch stands.
func (r *Runtime) settleLocked(ctx context.Context, c addrChange) {
	for i := range settleReads {
		if r.conn == nil {
			return
		}
		ans, err := r.roundTripLocked(ctx, []string{"show servers state " + c.backend})
		if err != nil {
			r.log.Debug("settling a batch's address changes failed; reconnecting", "err", err)
			r.dropLocked()
			return
		}
		if len(ans) == 1 && c.shownIn(ans[0].Text) {
			return
		}
		if i+1 < settleReads {
			t := time.NewTimer(settleWait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
	r.log.Debug("address change not visible yet after settling", "backend", c.backend, "server", c.server, "reads", settleReads)
}

// shownIn reports whether a `show servers state` answer shows c's server
// at c's address (and port, when c gives one); true when the answer does
// not list the server at all (nothing to wait for).
func (c addrChange) shownIn(out string) bool {
	states, err := ParseServersState(out)
	if err != nil {
		return true
	}
	for _, s := range states {
		if s.Backend == c.backend && s.Server == c.server {
			return s.Addr.Unmap() == c.addr && (c.port == 0 || int(s.Port) == c.port)
		}
	}
	return true
}
