package render

import (
	"bufio"
	"io"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// A spare's free slots created at runtime (Options.RuntimeSlots, issue 29:
// the pool's start). HAProxy parses a server line in ~8 µs and keeps ~4 KB
// for it (BENCHMARKS.md, "The pool's start-up cost"), and most of the
// pool's server lines are free slots: 4 per free spare and the headroom of
// every occupied one. With RuntimeSlots a spare's section holds its slots
// up to the last one in use (or bound to a node); the free slots after it
// are not in the file, only named by one comment line
// (RuntimeSlotsComment): the driver creates each with `add server` (2.6:
// appended after the backend's other servers, so `show servers state`
// still lists s1, s2, ... in order) in the pass that first puts a server
// into it, before any other operation on it (plan.Actual.Absent). The
// structure hash still covers every slot of the layout (the skeleton
// writes them all), so which of them HAProxy holds changes no hash, and a
// slot created at runtime that later holds a server is written in the
// file from then on (the file is written again after the pass).
//
// HAProxy 2.6 takes `add server` only in a backend whose balance
// algorithm is dynamic, with a subset of the server keywords (not
// `cookie`), and a server added at runtime inherits no default-server
// line; a checked server's file descriptor is not counted in the limits
// HAProxy sets at start. So only spares of a class with a dynamic
// balance, no health check of their own, no cookie, no TLS to the
// servers and no ClientIP affinity take it; every other backend keeps all
// its slots in the file.

// RuntimeSlotsComment starts the comment line of a backend section that
// names the free slots not written in the file: "# free slots created at
// runtime: sK-sN".
const RuntimeSlotsComment = "# free slots created at runtime: "

// RuntimeSlotsOK reports whether be's free slots after its last one in
// use may be left out of the file (Options.RuntimeSlots).
func RuntimeSlotsOK(be *model.Backend, opts Options) bool {
	if !opts.RuntimeSlots || opts.Legacy&LooseChecked != 0 {
		return false
	}
	if _, ok := model.SpareIndex(be.Name); !ok {
		return false
	}
	switch be.Balance {
	case "roundrobin", "leastconn", "first", "random":
	default:
		return false // static-rr and the hashes: not dynamic, or not checked here
	}
	return !be.Check.Enabled && be.Cookie == nil && be.TLS == nil && be.Affinity == 0
}

// FileSlots is how many of be's slots (its layout) the file holds: all
// of them, or with RuntimeSlotsOK those up to the last one in use or
// bound to a node.
func FileSlots(be *model.Backend, slots []model.Slot, opts Options) int {
	if !RuntimeSlotsOK(be, opts) {
		return len(slots)
	}
	n := len(slots)
	for n > 0 && !slots[n-1].Used && slots[n-1].Track == 0 {
		n--
	}
	return n
}

// RuntimeSlotOptions are the keywords `add server` takes for a free slot
// of be created at runtime: in maintenance, with what the backend's
// default-server line would give it.
func RuntimeSlotOptions(be *model.Backend) []string {
	return append([]string{"disabled"}, ServerOptions(be)...)
}

// writeRuntimeSlots writes the comment naming slots[n:], when there are
// any.
func writeRuntimeSlots(w func(...string), slots []model.Slot, n int) {
	if n < len(slots) {
		w("\t" + RuntimeSlotsComment + model.SlotName(n) + "-" + model.SlotName(len(slots)-1))
	}
}

// ScanRuntimeSlots reads from a config this package rendered the number
// of slots of every backend with slots created at runtime
// (RuntimeSlotsComment), and the structure hash of its description.
func ScanRuntimeSlots(r io.Reader) (hash string, slots map[string]int, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	section, name := "", ""
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			f := strings.Fields(line)
			section, name = f[0], ""
			if len(f) > 1 {
				name = f[1]
			}
			continue
		}
		t := strings.TrimSpace(line)
		if section == "global" {
			if h, ok := strings.CutPrefix(t, "description "+DescriptionPrefix); ok {
				hash = h
			}
			continue
		}
		rest, ok := strings.CutPrefix(t, RuntimeSlotsComment)
		if !ok || section != "backend" {
			continue
		}
		_, last, ok := strings.Cut(rest, "-")
		if n, ok2 := slotNumber(last); ok && ok2 {
			if slots == nil {
				slots = map[string]int{}
			}
			slots[name] = n
		}
	}
	return hash, slots, sc.Err()
}

// slotNumber is N of slot name sN (N >= 1, at most 6 digits).
func slotNumber(s string) (int, bool) {
	if len(s) < 2 || len(s) > 7 || s[0] != 's' || s[1] == '0' {
		return 0, false
	}
	n := 0
	for _, c := range []byte(s[1:]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
