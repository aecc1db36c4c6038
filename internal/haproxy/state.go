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
	line, rest, _ := strings.Cut(out, "\n")
	if strings.TrimSpace(line) != "1" {
		return nil, fmt.Errorf("%w: show servers state: unsupported format version %q", ErrCommand, line)
	}
	line, rest, _ = strings.Cut(rest, "\n")
	if !strings.HasPrefix(line, "#") {
		return nil, fmt.Errorf("%w: show servers state: missing header", ErrCommand)
	}
	cols := strings.Fields(strings.TrimPrefix(line, "#"))
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
			return nil, fmt.Errorf("%w: show servers state: no %s column", ErrCommand, name)
		}
	}
	iBe, iSrv, iAddr, iOp, iAdm, iPort := idx["be_name"], idx["srv_name"], idx["srv_addr"], idx["srv_op_state"], idx["srv_admin_state"], idx["srv_port"]

	out2 := make([]ServerState, 0, strings.Count(rest, "\n")+1)
	var fieldBuf [32]string // stack storage: no write barriers per field
	fields := fieldBuf[:0]
	for lineNo := 3; rest != ""; lineNo++ {
		line, rest, _ = strings.Cut(rest, "\n")
		if line == "" || line[0] == '#' {
			continue
		}
		fields = splitFields(fields[:0], line)
		if len(fields) <= maxIdx {
			return nil, fmt.Errorf("%w: show servers state: line %d: %d fields, want > %d", ErrCommand, lineNo, len(fields), maxIdx)
		}
		s := ServerState{Backend: fields[iBe], Server: fields[iSrv]}
		var err error
		if a := fields[iAddr]; a != "-" {
			if s.Addr, err = netip.ParseAddr(a); err != nil {
				return nil, fmt.Errorf("%w: show servers state: line %d: %w", ErrCommand, lineNo, err)
			}
		}
		if p := fields[iPort]; p != "-" {
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("%w: show servers state: line %d: port: %w", ErrCommand, lineNo, err)
			}
			s.Port = uint16(n)
		}
		if s.OpState, err = strconv.Atoi(fields[iOp]); err != nil {
			return nil, fmt.Errorf("%w: show servers state: line %d: op state: %w", ErrCommand, lineNo, err)
		}
		if s.AdminState, err = strconv.Atoi(fields[iAdm]); err != nil {
			return nil, fmt.Errorf("%w: show servers state: line %d: admin state: %w", ErrCommand, lineNo, err)
		}
		out2 = append(out2, s)
	}
	return out2, nil
}

// splitFields appends the space-separated fields of line to dst without
// allocating new strings.
func splitFields(dst []string, line string) []string {
	start := -1
	for i := 0; i < len(line); i++ {
		if c := line[i]; c == ' ' || c == '\t' || c == '\r' {
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
