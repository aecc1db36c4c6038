package render

import (
	"bufio"
	"io"
	"net/netip"
	"strings"
)

// ScanConfig reads a config file this package rendered, line by line: fn
// gets the fields of every line that is neither blank nor a comment, with
// the section the line belongs to ("global", "frontend", "backend"...; ""
// before the first) and that section's name ("" when it has none). A
// section begins at a line that is not indented, which fn gets too.
func ScanConfig(r io.Reader, fn func(section, name string, fields []string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	section, name := "", ""
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			section, name = f[0], ""
			if len(f) > 1 {
				name = f[1]
			}
		}
		fn(section, name, f)
	}
	return sc.Err()
}

// ScanPeer reads the local peer's address from a config this package
// rendered (Options.Peer), invalid when it has none.
func ScanPeer(r io.Reader) netip.AddrPort {
	var out netip.AddrPort
	_ = ScanConfig(r, func(section, name string, f []string) {
		if section == "peers" && name == PeersSection && len(f) == 3 && f[0] == "peer" && f[1] == LocalPeer {
			if ap, err := netip.ParseAddrPort(f[2]); err == nil {
				out = ap
			}
		}
	})
	return out
}
