package status

import (
	"bytes"
	"os"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// listened adds to fc the Services behind the fixed listener of
// --listeners=tproxy (docs/listeners.md): they have no frontend in the
// file; the listener's map, which the file names, says which addresses
// and ports reach which backend. One row per backend, named like the
// frontend its Service would have in ports mode.
func listened(fc *fileConfig, raw []byte) {
	var mapPath string
	_ = render.ScanConfig(bytes.NewReader(raw), func(section, name string, f []string) {
		if section != "frontend" || name != render.ListenerFrontend || len(f) != 2 || f[0] != "use_backend" {
			return
		}
		if _, rest, ok := strings.Cut(f[1], ",map_str("); ok {
			mapPath = strings.TrimSuffix(rest, ")]")
		}
	})
	if mapPath == "" {
		return
	}
	b, err := os.ReadFile(mapPath)
	if err != nil {
		return // no rows: the map is missing (the controller writes it before a reload)
	}
	index := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		key, be := f[0], f[1]
		i, ok := index[be]
		if !ok {
			i = len(fc.frontends)
			index[be] = i
			fc.frontends = append(fc.frontends, frontend{name: "fe" + strings.TrimPrefix(be, "be"), backend: be})
		}
		fc.frontends[i].binds = append(fc.frontends[i].binds, listenOf(key))
	}
}

// listenOf writes a listener key (ADDR:PORT, an IPv6 address without
// brackets: render.ListenerKey) as a bind is written.
func listenOf(key string) string {
	i := strings.LastIndexByte(key, ':')
	if i < 0 || !strings.Contains(key[:i], ":") {
		return key
	}
	return "[" + key[:i] + "]" + key[i:]
}
