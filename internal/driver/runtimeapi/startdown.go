package runtimeapi

import (
	"bufio"
	"io"
	"strconv"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Servers a reload brings in start down until their check passes.
//
// HAProxy starts every server of a new configuration UP ("start OK, check
// at once"; init-state, which changes that, came only in 3.1): a new
// Service's servers, and a server that takes a slot at the reload, took
// connections before their first check, and one that refuses them (its
// node's kube-proxy not serving the Service yet) lost them. The state file
// the new worker loads (server-state-file, load-server-state-from-file
// global: HAProxy 2.6, 3.0 and later alike) carries the running servers'
// states across the reload (keepUnchanged); startDown adds a line for each
// server the reload brings into a backend checked by itself (the same
// backends whose runtime slots are held, untilChecked) saying it is
// stopped, with a health of 0: it comes up after `rise` passing checks,
// as one held at runtime does. But a backend that served before the
// reload and keeps none of its UP servers through it (every server
// replaced: a restarted controller given other --targets, Pods in place
// of nodes) would serve nothing until a check passed, and every
// connection meanwhile would be closed at once (TestRealNodeServing's
// lost connection, 61 ms after such a reload): its new servers start as
// HAProxy starts them, UP, their endpoints ready by Kubernetes' own
// probes, and a failing one goes down at its first check.

// startDown notes, while the running servers' states are copied into the
// state file, which slots of next keep theirs (line), and then writes
// a stopped line for every other slot of next in service in a backend
// checked says is checked by itself (write).
type startDown struct {
	next    model.Layout
	checked func(be string) bool
	kept    map[string]map[string]bool // backend -> slots whose line was kept
	// served: backends with a server UP before the reload, true when one
	// of those is kept (UP after it too).
	served map[string]bool
}

func newStartDown(next model.Layout, checked func(be string) bool) *startDown {
	return &startDown{next: next, checked: checked, kept: map[string]map[string]bool{}, served: map[string]bool{}}
}

// line notes the running worker's line of slot be/srv: whether it is UP
// and whether it is kept.
func (s *startDown) line(be, srv []byte, up, kept bool) {
	if !s.checked(string(be)) {
		return
	}
	if up {
		s.served[string(be)] = s.served[string(be)] || kept
	}
	if !kept {
		return
	}
	m := s.kept[string(be)]
	if m == nil {
		m = map[string]bool{}
		s.kept[string(be)] = m
	}
	m[string(srv)] = true
}

// write writes the stopped lines (format 1, its 20 fields that every
// version reads) to w: the backend and server by name (HAProxy matches a
// line of the global file by those alone), the server's address and port
// as configured, operational state 0 (stopped) and check health 0, the
// administrative state 0 (the configuration's own maintenance stays), the
// weights 1 and 1 (the configuration's, which sets none), the check's
// status 1 ("Initializing", a check not run yet: with 0, "Unknown", 2.6
// never ran the server's check and it stayed down) and state 6 (configured
// and enabled), and no agent, forced id, FQDN or SRV record state.
func (s *startDown) write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	var b []byte
	for be, slots := range s.next {
		if keptUp, served := s.served[be]; !s.checked(be) || (served && !keptUp) {
			continue // served before, nothing UP kept: its servers start UP
		}
		for i, sl := range slots {
			name := model.SlotName(i)
			if sl.WantMaint() || s.kept[be][name] || !sl.Server.Addr.IsValid() {
				continue
			}
			b = append(b[:0], "0 "...)
			b = append(b, be...)
			b = append(b, " 0 "...)
			b = append(b, name...)
			b = append(b, ' ')
			b = sl.Server.Addr.AppendTo(b)
			b = append(b, " 0 0 1 1 0 1 0 0 6 0 0 0 - "...)
			b = strconv.AppendUint(b, uint64(sl.Server.Port), 10)
			b = append(b, " -\n"...)
			if _, err := bw.Write(b); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}
