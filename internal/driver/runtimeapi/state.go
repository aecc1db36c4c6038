package runtimeapi

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// keepUnchanged is the filter of "show servers state" lines (format 1) that
// keeps the slots holding the same server (address and port) in next, the
// layout about to be loaded. The state file is meant to carry health and
// drain states over a reload; a slot whose server changes must not inherit
// them: HAProxy would restore, say, the stopped state of a slot that was
// free, and with health checks the new server would stay DOWN until it
// passed `rise` checks, which never happens while reloads come faster than
// that. Without a line, a slot starts as its config line says. Lines of
// slots that go away are dropped. Unparsable input passes through: a header
// without the columns needed keeps every line (nil), and so does a line with
// too few fields.
//
// It is built from the header and then decides line by line, so the dump
// (megabytes at tens of thousands of servers) is never held whole.
func keepUnchanged(header string, next model.Layout) func(line []byte) bool {
	return keepUnchangedNoting(header, next, nil)
}

// keepUnchangedNoting is keepUnchanged that also calls note, when not nil,
// with the backend and server of each line (views of the line), whether
// the server runs UP (its operational state 2: a header without that
// column says false) and whether the line is kept. It returns nil where
// keepUnchanged keeps every line.
func keepUnchangedNoting(header string, next model.Layout, note func(be, srv []byte, up, kept bool)) func(line []byte) bool {
	iBe, iSrv, iAddr, iPort, iOp := -1, -1, -1, -1, -1
	for i, c := range strings.Fields(strings.TrimPrefix(header, "#")) {
		switch c {
		case "be_name":
			iBe = i
		case "srv_name":
			iSrv = i
		case "srv_addr":
			iAddr = i
		case "srv_port":
			iPort = i
		case "srv_op_state":
			iOp = i
		}
	}
	if min(iBe, iSrv, iAddr, iPort) < 0 {
		return nil
	}
	need := max(iBe, iSrv, iAddr, iPort)
	// Reused from line to line: the filter allocates nothing per line.
	var fields [][]byte
	var scratch [64]byte
	return func(line []byte) bool {
		fields = haproxy.AppendFields(fields[:0], line)
		if len(fields) <= need {
			return true
		}
		keep := keeps(next, fields[iBe], fields[iSrv], fields[iAddr], fields[iPort], scratch[:0])
		if note != nil {
			note(fields[iBe], fields[iSrv], iOp >= 0 && iOp < len(fields) && string(fields[iOp]) == "2", keep)
		}
		return keep
	}
}

// keeps reports whether slot be/srv is used in next by the server addr:port,
// as HAProxy prints them. scratch is room to format the slot's server.
func keeps(next model.Layout, be, srv, addr, port, scratch []byte) bool {
	slots := next[string(be)] // no allocation for a map lookup
	sl := findSlot(slots, srv)
	if sl == nil || !sl.Used {
		return false // the slot goes away, or will be free
	}
	// An invalid address formats as nothing, which no field equals.
	if !bytes.Equal(sl.Server.Addr.AppendTo(scratch), addr) {
		return false
	}
	return bytes.Equal(strconv.AppendUint(scratch, uint64(sl.Server.Port), 10), port)
}

// findSlot returns the slot named name: slot i is named model.SlotName(i).
func findSlot(slots []model.Slot, name []byte) *model.Slot {
	if i, ok := plan.SlotIndex(string(name)); ok && i < len(slots) {
		return &slots[i]
	}
	return nil
}
