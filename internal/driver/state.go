package driver

import (
	"strconv"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// keepUnchanged filters "show servers state" output (format 1) down to the
// slots that hold the same server (address and port) in next, the layout
// about to be loaded. The state file is meant to carry health and drain
// states over a reload; a slot whose server changes must not inherit them:
// HAProxy would restore, say, the stopped state of a slot that was free,
// and with health checks the new server would stay DOWN until it passed
// `rise` checks, which never happens while reloads come faster than that.
// Without a line, a slot starts as its config line says. Unparsable input
// is returned as is.
func keepUnchanged(out string, next model.Layout) string {
	version, rest, _ := strings.Cut(out, "\n")
	header, rest, _ := strings.Cut(rest, "\n")
	if strings.TrimSpace(version) != "1" || !strings.HasPrefix(header, "#") {
		return out
	}
	iBe, iSrv, iAddr, iPort := -1, -1, -1, -1
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
		}
	}
	need := max(iBe, iSrv, iAddr, iPort)
	if min(iBe, iSrv, iAddr, iPort) < 0 {
		return out
	}
	var b strings.Builder
	b.Grow(len(out))
	b.WriteString(version + "\n" + header)
	var fields []string
	for rest != "" {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if line == "" {
			continue
		}
		fields = append(fields[:0], strings.Fields(line)...)
		if len(fields) <= need || keeps(next, fields[iBe], fields[iSrv], fields[iAddr], fields[iPort]) {
			b.WriteString("\n" + line)
		}
	}
	return b.String()
}

func keeps(next model.Layout, be, srv, addr, port string) bool {
	for _, sl := range next[be] {
		if sl.Name == srv {
			return sl.Used && sl.Server.Addr.String() == addr && strconv.Itoa(int(sl.Server.Port)) == port
		}
	}
	return false // the slot goes away
}
