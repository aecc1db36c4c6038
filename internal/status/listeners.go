package status

import (
	"bytes"
	"os"
	"strings"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

// listened adds to fc the Services behind the fixed listener of
// --listeners=tproxy (docs/listeners.md): they have no frontend in the
// file; the listener's map, which the file names, says which addresses
// and ports reach which backend. One row per backend, named like the
// frontend its Service would have in ports mode. With --backend-pool the
// map names spares: the pool file (pool, spares.FileBeside) names the
// backend each occupies, and the row is named after it (its statistics
// stay the spare's, the HAProxy backend). Without a readable pool file a
// spare's row keeps the spare's name.
func listened(fc *fileConfig, raw []byte, pool string) {
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
	var pooled *spares.State // read once, at the first spare
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
			named := be
			if _, spare := model.SpareIndex(be); spare {
				if pooled == nil {
					s := occupants(pool)
					pooled = &s
				}
				if occ := pooled.ModelBackend(be); occ != "" {
					named = occ
				}
			}
			fc.frontends = append(fc.frontends, frontend{name: "fe" + strings.TrimPrefix(named, "be"), backend: be})
		}
		fc.frontends[i].binds = append(fc.frontends[i].binds, listenOf(key))
	}
}

// occupants is the pool in the file at path; empty when it cannot be
// read.
func occupants(path string) spares.State {
	f, err := os.Open(path)
	if err != nil {
		return spares.State{}
	}
	defer f.Close()
	s, err := spares.Decode(f)
	if err != nil {
		return spares.State{}
	}
	return s
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
