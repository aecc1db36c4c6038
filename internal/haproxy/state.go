package haproxy

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Server operational states (srv_op_state).
const (
	OpStopped  = 0
	OpStarting = 1
	OpRunning  = 2
	OpStopping = 3
)

// Server administrative state bits (srv_admin_state), as in HAProxy 2.6.
const (
	AdminForcedMaint     = 0x01 // set by "set server .. state maint" (and by "disabled")
	AdminInheritedMaint  = 0x02 // inherited from a tracked server
	AdminConfigMaint     = 0x04 // "disabled" in the configuration; stays set after "state ready"
	AdminForcedDrain     = 0x08 // set by "set server .. state drain"
	AdminInheritedDrain  = 0x10 // inherited from a tracked server
	AdminResolutionMaint = 0x20 // DNS resolution failed
	AdminFQDNChanged     = 0x40 // FQDN set over the runtime API

	// adminMaintMask is HAProxy's SRV_ADMF_MAINT: the bits that really put a
	// server in maintenance. AdminConfigMaint is not part of it: it only
	// records that the configuration said "disabled".
	adminMaintMask = AdminForcedMaint | AdminInheritedMaint | AdminResolutionMaint
	adminDrainMask = AdminForcedDrain | AdminInheritedDrain
)

// ServerState is one row of "show servers state".
type ServerState struct {
	Backend, Server string
	Addr            netip.Addr // srv_addr; invalid when HAProxy prints "-"
	Port            uint16     // srv_port
	OpState         int        // srv_op_state (0 stopped, 1 starting, 2 running, 3 stopping)
	AdminState      int        // srv_admin_state bit field
}

// Maint reports whether the server is in maintenance (forced, inherited or
// resolution). The configuration bit alone does not count: HAProxy keeps it
// set on a "disabled" server after "set server .. state ready", and the
// server is then in service (a "disabled" server that was never made ready
// also has the forced bit, so it is reported as in maintenance).
func (s ServerState) Maint() bool { return s.AdminState&adminMaintMask != 0 }

// Drain reports whether any drain bit is set.
func (s ServerState) Drain() bool { return s.AdminState&adminDrainMask != 0 }

// OwnMaint is Maint without what a tracking server inherits from the
// server it tracks: the state set on this server itself.
func (s ServerState) OwnMaint() bool {
	return s.AdminState&(adminMaintMask&^AdminInheritedMaint) != 0
}

// OwnDrain is Drain without what a tracking server inherits.
func (s ServerState) OwnDrain() bool { return s.AdminState&AdminForcedDrain != 0 }

// Up reports whether the server is running (op state 2).
func (s ServerState) Up() bool { return s.OpState == OpRunning }

// ShowServersState runs "show servers state" and parses its version-1 output.
func (r *Runtime) ShowServersState(ctx context.Context) ([]ServerState, error) {
	ans, err := r.ExecChecked(ctx, []string{"show servers state"})
	if err != nil {
		return nil, err
	}
	return ParseServersState(ans[0])
}

// ParseServersState parses the output of "show servers state" (format 1).
// Columns are located by the names in the "#" header line.
func ParseServersState(out string) ([]ServerState, error) {
	version, rest, _ := strings.Cut(out, "\n")
	header, rest, _ := strings.Cut(rest, "\n")
	cols, err := parseStateHead(version, header)
	if err != nil {
		return nil, err
	}
	out2 := make([]ServerState, 0, strings.Count(rest, "\n")+1)
	var fieldBuf [32]string // stack storage: no write barriers per field
	for lineNo := 3; rest != ""; lineNo++ {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := cols.parseRow(line, lineNo, fieldBuf[:0])
		if err != nil {
			return nil, err
		}
		out2 = append(out2, s)
	}
	return out2, nil
}

// stateColumns locates, in a row of "show servers state", the columns a
// ServerState is made of.
type stateColumns struct {
	be, srv, addr, op, adm, port int
	max                          int // the largest of them
}

// parseStateHead checks the version line (format 1 only) and locates the
// columns by their names in the "#" header line.
func parseStateHead(version, header string) (stateColumns, error) {
	if strings.TrimSpace(version) != "1" {
		return stateColumns{}, fmt.Errorf("%w: show servers state: unsupported format version %q", ErrCommand, version)
	}
	if !strings.HasPrefix(header, "#") {
		return stateColumns{}, fmt.Errorf("%w: show servers state: missing header", ErrCommand)
	}
	cols := strings.Fields(strings.TrimPrefix(header, "#"))
	idx := map[string]int{"be_name": -1, "srv_name": -1, "srv_addr": -1, "srv_op_state": -1, "srv_admin_state": -1, "srv_port": -1}
	maxIdx := 0
	for i, c := range cols {
		if _, ok := idx[c]; ok {
			idx[c] = i
			maxIdx = max(maxIdx, i)
		}
	}
	for name, i := range idx {
		if i < 0 {
			return stateColumns{}, fmt.Errorf("%w: show servers state: no %s column", ErrCommand, name)
		}
	}
	return stateColumns{be: idx["be_name"], srv: idx["srv_name"], addr: idx["srv_addr"], op: idx["srv_op_state"],
		adm: idx["srv_admin_state"], port: idx["srv_port"], max: maxIdx}, nil
}

// parseRow parses one server line (line number lineNo, for messages), using
// fields as scratch space. The Backend and Server strings of the result are
// substrings of line.
func (c *stateColumns) parseRow(line string, lineNo int, fields []string) (ServerState, error) {
	fields = AppendFields(fields, line)
	if len(fields) <= c.max {
		return ServerState{}, fmt.Errorf("%w: show servers state: line %d: %d fields, want > %d", ErrCommand, lineNo, len(fields), c.max)
	}
	s := ServerState{Backend: fields[c.be], Server: fields[c.srv]}
	var err error
	if a := fields[c.addr]; a != "-" {
		if s.Addr, err = netip.ParseAddr(a); err != nil {
			return ServerState{}, fmt.Errorf("%w: show servers state: line %d: %w", ErrCommand, lineNo, err)
		}
	}
	if p := fields[c.port]; p != "-" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return ServerState{}, fmt.Errorf("%w: show servers state: line %d: port: %w", ErrCommand, lineNo, err)
		}
		s.Port = uint16(n)
	}
	if s.OpState, err = strconv.Atoi(fields[c.op]); err != nil {
		return ServerState{}, fmt.Errorf("%w: show servers state: line %d: op state: %w", ErrCommand, lineNo, err)
	}
	if s.AdminState, err = strconv.Atoi(fields[c.adm]); err != nil {
		return ServerState{}, fmt.Errorf("%w: show servers state: line %d: admin state: %w", ErrCommand, lineNo, err)
	}
	return s, nil
}

// AppendFields appends the fields of line separated by ASCII white space
// (what strings.Fields splits HAProxy's ASCII output on) to dst, as
// sub-slices of line: nothing is copied, for the rows of dumps of tens of
// thousands of servers.
func AppendFields[T string | []byte](dst []T, line T) []T {
	start := -1
	for i := 0; i < len(line); i++ {
		if c := line[i]; c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f' {
			if start >= 0 {
				dst = append(dst, line[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		dst = append(dst, line[start:])
	}
	return dst
}

// ShowInfo runs "show info" and returns its "Key: value" pairs. Keys keep
// HAProxy's spelling (for example "Pid", "Uptime_sec", and the lower-case
// "node" and "description").
func (r *Runtime) ShowInfo(ctx context.Context) (map[string]string, error) {
	ans, err := r.ExecChecked(ctx, []string{"show info"})
	if err != nil {
		return nil, err
	}
	return ParseInfo(ans[0]), nil
}

// ParseInfo parses "Key: value" lines; lines without ": " are ignored.
func ParseInfo(out string) map[string]string {
	m := make(map[string]string, 96)
	for line := range strings.Lines(out) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m
}
