package haproxy

import (
	"encoding/csv"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// StatRow is one server line of `show stat` (HAProxy's stats CSV): the
// columns this project reads. Columns the output lacks stay zero.
type StatRow struct {
	Proxy, Server string
	Addr          string        // the server's IP, without its port
	Status        string        // UP, UP 1/2 (going down), DOWN, DOWN 1/2, MAINT, DRAIN, NOLB, no check...
	LastChange    time.Duration // lastchg: since the last change of status
	// Stot counts the connections HAProxy sent to the server, those that
	// then failed to connect included (once per attempt).
	Stot   int64
	Wretr  int64 // retries on the same server
	Wredis int64 // connections redispatched from this server to another
}

// Down reports whether the server takes no new connection (DOWN, MAINT).
func (r StatRow) Down() bool {
	return strings.HasPrefix(r.Status, "DOWN") || strings.HasPrefix(r.Status, "MAINT")
}

// ParseStat reads the server lines of `show stat` output; frontend and
// backend lines (svname FRONTEND, BACKEND) are skipped. The header (`#
// pxname,svname,...`) names the columns: pxname, svname and status must be
// there, and so must every column in need (e.g. "stot", "lastchg").
func ParseStat(out string, need ...string) ([]StatRow, error) {
	head, body, _ := strings.Cut(out, "\n")
	if !strings.HasPrefix(head, "# ") {
		return nil, fmt.Errorf("show stat: no header in %q", clip(out))
	}
	col := map[string]int{}
	for i, name := range strings.Split(strings.TrimPrefix(head, "# "), ",") {
		col[name] = i
	}
	width := 0 // a line must reach every column read
	for _, c := range append([]string{"pxname", "svname", "status"}, need...) {
		i, ok := col[c]
		if !ok {
			return nil, fmt.Errorf("show stat: no column %q", c)
		}
		width = max(width, i+1)
	}
	rd := csv.NewReader(strings.NewReader(body))
	rd.FieldsPerRecord = -1
	recs, err := rd.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("show stat: %w", err)
	}
	var rows []StatRow
	for _, f := range recs {
		if len(f) < width {
			return nil, fmt.Errorf("show stat: short line %q", strings.Join(f, ","))
		}
		sv := f[col["svname"]]
		if sv == "FRONTEND" || sv == "BACKEND" {
			continue
		}
		get := func(name string) string {
			if i, ok := col[name]; ok && i < len(f) {
				return f[i]
			}
			return ""
		}
		r := StatRow{Proxy: f[col["pxname"]], Server: sv, Status: f[col["status"]], Addr: get("addr")}
		if host, _, err := net.SplitHostPort(r.Addr); err == nil {
			r.Addr = host
		}
		var lastchg int64
		for name, p := range map[string]*int64{"stot": &r.Stot, "wretr": &r.Wretr, "wredis": &r.Wredis, "lastchg": &lastchg} {
			if v := get(name); v != "" {
				if *p, err = strconv.ParseInt(v, 10, 64); err != nil {
					return nil, fmt.Errorf("show stat: %s of %s/%s: %w", name, r.Proxy, sv, err)
				}
			}
		}
		r.LastChange = time.Duration(lastchg) * time.Second
		rows = append(rows, r)
	}
	return rows, nil
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}
