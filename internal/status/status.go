// Package status reports what a running HAProxy serves for each Service
// port, from the config file the controller wrote and HAProxy's Runtime
// API: the rows of `haproxy-k8s-sync status`.
package status

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/spares"
)

// Row is one Service port.
type Row struct {
	Service  string   `json:"service"` // namespace/name, from the frontend's name ("" when it does not follow fe_NS_NAME_PORT)
	Frontend string   `json:"frontend"`
	Listen   []string `json:"listen"` // bind addresses
	Backend  string   `json:"backend"`
	Up       int      `json:"up"`          // in service (health checks pass, or none)
	Draining int      `json:"draining"`    // drain: existing connections only
	Down     int      `json:"down"`        // health checks fail
	Maint    int      `json:"maintenance"` // node out of service
	// LastChange is how long ago a server of the backend last changed
	// state (HAProxy's lastchg); -1 when it has no server.
	LastChange time.Duration `json:"lastChangeSeconds"`
	// AnnouncedBy is who announces the listen addresses (WithAnnounced:
	// with --announce=l2 or bgp; nil otherwise).
	AnnouncedBy []string `json:"announcedBy,omitempty"`
}

// Report is the whole status.
type Report struct {
	Source      string `json:"source,omitempty"`      // "" (the stats socket and config file) or SourceDataplane
	FileHash    string `json:"fileHash,omitempty"`    // structure hash in the config file
	RunningHash string `json:"runningHash,omitempty"` // structure hash HAProxy reports
	InSync      bool   `json:"inSync"`
	// Problems say why a Data Plane API report is not in sync.
	Problems []string `json:"outOfSync,omitempty"`
	Rows     []Row    `json:"services"`
	// Announced, with an announcer that says, is whose view AnnouncedBy is.
	Announced *Announced `json:"announced,omitempty"`
	// now is when the report was taken (the age of Announced)
	now time.Time
}

// Healthy reports whether the report gives no reason for concern: HAProxy
// runs the file's structure, no server is down and every backend with
// servers has one up.
func (r Report) Healthy() bool {
	if !r.InSync {
		return false
	}
	for _, row := range r.Rows {
		if row.Down > 0 || (row.Up == 0 && row.Draining+row.Maint > 0) {
			return false
		}
	}
	return true
}

// ErrUnreadable classifies a config file that is missing or not one the
// controller wrote.
var ErrUnreadable = errors.New("status: config file unreadable")

// Collect reads the config file at cfgPath and asks the HAProxy whose
// worker admin socket is at socket.
func Collect(ctx context.Context, cfgPath, socket string) (Report, error) {
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		return Report{}, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	file := parseConfig(raw)
	listened(&file, raw, spares.FileBeside(cfgPath)) // --listeners=tproxy (listeners.go)
	rt := haproxy.NewRuntime(socket)
	defer rt.Close()
	ctx, cancel := haproxy.WithDefaultTimeout(ctx, 10*time.Second)
	defer cancel()
	info, err := rt.ShowInfo(ctx)
	if err != nil {
		return Report{}, err
	}
	stat, err := rt.Exec(ctx, []string{"show stat -1 4 -1"})
	if err != nil {
		return Report{}, err
	}
	rows, err := haproxy.ParseStat(stat[0], "lastchg")
	if err != nil {
		return Report{}, err
	}
	servers := make(map[string]haproxy.StatRow, len(rows))
	for _, r := range rows {
		servers[r.Proxy+"/"+r.Server] = r
	}
	return build(file, strings.TrimPrefix(info["description"], render.DescriptionPrefix), servers), nil
}

// fileConfig is what status needs from haproxy.cfg.
type fileConfig struct {
	hash      string
	frontends []frontend
	used      map[string][]string // backend → servers that point somewhere (not free slots)
}

type frontend struct {
	name, backend string
	binds         []string
}

// parseConfig reads the sections the controller renders; it needs no
// more than their fixed shape (see internal/render).
func parseConfig(raw []byte) fileConfig {
	fc := fileConfig{used: map[string][]string{}}
	_ = render.ScanConfig(bytes.NewReader(raw), func(section, name string, f []string) {
		switch {
		case f[0] == "description" && len(f) == 2:
			fc.hash = strings.TrimPrefix(f[1], render.DescriptionPrefix)
		case section == "frontend" && f[0] == "frontend":
			fc.frontends = append(fc.frontends, frontend{name: name})
		case section == "frontend" && f[0] == "bind" && len(f) >= 2:
			fe := &fc.frontends[len(fc.frontends)-1]
			fe.binds = append(fe.binds, f[1])
		case section == "frontend" && f[0] == "default_backend" && len(f) == 2:
			fc.frontends[len(fc.frontends)-1].backend = f[1]
		case section == "backend" && f[0] == "backend":
			fc.used[name] = fc.used[name][:0:0]
		case section == "backend" && f[0] == "server" && len(f) >= 3 && f[2] != render.FreeSlotAddr:
			fc.used[name] = append(fc.used[name], f[1])
		}
	})
	return fc
}

func build(fc fileConfig, running string, servers map[string]haproxy.StatRow) Report {
	rep := Report{FileHash: fc.hash, RunningHash: running, InSync: fc.hash != "" && fc.hash == running}
	for _, fe := range fc.frontends {
		if strings.HasPrefix(fe.name, "_") { // _stats, _monitor: not Services
			continue
		}
		row := Row{Service: serviceOf(fe.name), Frontend: fe.name, Listen: fe.binds, Backend: fe.backend, LastChange: -1}
		for _, s := range fc.used[fe.backend] {
			st, ok := servers[fe.backend+"/"+s]
			if !ok {
				row.Down++ // in the file, not running: out of sync
				continue
			}
			switch {
			case strings.HasPrefix(st.Status, "MAINT"): // MAINT (via _nodes/s1), MAINT(resolution)
				row.Maint++
			case strings.HasPrefix(st.Status, "DRAIN"):
				row.Draining++
			case strings.HasPrefix(st.Status, "DOWN"):
				row.Down++
			default: // UP, "no check", NOLB, and transitions (UP 1/3)
				row.Up++
			}
			if row.LastChange < 0 || st.LastChange < row.LastChange {
				row.LastChange = st.LastChange
			}
		}
		rep.Rows = append(rep.Rows, row)
	}
	sort.Slice(rep.Rows, func(i, j int) bool { return rep.Rows[i].Frontend < rep.Rows[j].Frontend })
	return rep
}

// serviceOf reads namespace/name from fe_NS_NAME_PORT: Kubernetes names
// have no '_'.
func serviceOf(fe string) string {
	p := strings.Split(fe, "_")
	if len(p) != 4 || p[0] != "fe" {
		return ""
	}
	return p[1] + "/" + p[2]
}
