package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// A controller that restarts beside an HAProxy still running the config
// and pool its last run wrote finds it serving and changes only what
// differs, through the Runtime API: no reload, whether the world is the
// one it left or its servers changed meanwhile. The same when HAProxy
// stopped too and started again from the last run's files (a host's
// reboot; systemd's unit keeps the config): HAProxy serves from them
// while the controller lists, and the controller's first pass is runtime
// work only (issue 29: a start at 10,000 Services is not a 1.5 s reload).
// A Service added while the controller was down is structure: one reload
// with per-port frontends, none with the fixed listener and its pool.
//
// The maps a restarted controller finds in the worker it reads back and
// changes by difference (runtimeapi/mapread.go): no map command in an
// unchanged world, exactly the added Service's listener entry otherwise
// (it replaced the listener's maps whole: at 10,000 Services 10,166
// commands); no source-range ACL file the worker holds is pushed again.
func TestControllerRestartReloads(t *testing.T) {
	e := newEnv(t)
	np := nodePort()
	for i, n := range []string{"n1", "n2", "n3"} {
		e.addNode(n, i+1, true, np, np+1)
	}
	port := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "web", Port: port, NodePort: np, Local: true})
	e.setEndpoints("web", pod(1, "n1"))
	e.startController()
	e.eventually("n1 serves", serves(port, "n1"))
	e.eventually("the first controller's pass applied", e.applied)
	e.stopController()

	added := int32(haproxytest.FreePort(t))
	newReloads, newEntries := 1, 0 // a new frontend, its reload loading the maps
	if tproxyMode() {
		newReloads, newEntries = 0, 1 // a spare and the listener map's entry
	}
	for _, c := range []struct {
		name       string
		haproxyToo bool // HAProxy killed and started again from the files
		change     func()
		port       int32
		want       []string
		reloads    int
		entries    int // map entries added, changed or deleted
	}{
		{"unchanged world", false, func() {}, port, []string{"n1"}, 0, 0},
		{"servers changed while it was down", false, func() { e.setEndpoints("web", pod(1, "n1"), pod(2, "n2")) }, port, []string{"n1", "n2"}, 0, 0},
		{"HAProxy too, unchanged world", true, func() {}, port, []string{"n1", "n2"}, 0, 0},
		{"HAProxy too, servers changed", true, func() { e.setEndpoints("web", pod(2, "n2"), pod(3, "n3")) }, port, []string{"n2", "n3"}, 0, 0},
		{"a Service added while it was down", false, func() {
			e.createService(lab.Service{Namespace: ns, Name: "added", Port: added, NodePort: np + 1, Local: true})
			e.setEndpoints("added", pod(4, "n1"))
		}, added, []string{"n1"}, newReloads, newEntries},
	} {
		if c.haproxyToo {
			e.hap.Kill(t)
		}
		c.change()
		if c.haproxyToo {
			e.hap.Restart(t)
		}
		before := e.reloads()
		e.startController()
		e.eventually(c.name+": the restarted controller's first pass", e.applied)
		e.eventually(c.name+": served", serves(c.port, c.want...))
		if got := e.reloads() - before; got != c.reloads {
			t.Errorf("%s: %d reloads at the controller's restart, want %d; its passes:\n%s", c.name, got, c.reloads, passLines(e.ctlLog.String()))
		}
		if entries, whole := mapEdits(e.ctlLog.String()); entries != c.entries || whole != 0 {
			t.Errorf("%s: the restarted controller changed %d map entries and replaced %d maps whole, want %d and 0; its map lines:\n%s",
				c.name, entries, whole, c.entries, mapLines(e.ctlLog.String()))
		}
		if n := strings.Count(e.ctlLog.String(), "source ranges changed without reload"); n != 0 {
			t.Errorf("%s: the restarted controller pushed source ranges in %d passes, want none (the worker holds them)", c.name, n)
		}
		e.stopController()
	}
}

// applied reports nil once the controller's log has a pass that applied
// (an "update" line without an error).
func (e *env) applied() error {
	for _, l := range strings.Split(e.ctlLog.String(), "\n") {
		if strings.Contains(l, "msg=update") && !strings.Contains(l, " err=") {
			return nil
		}
	}
	return fmt.Errorf("no pass applied yet")
}

// mapEdits sums what a controller's log says its passes changed in the
// maps without a reload (runtimeapi's logMapEdits lines): the entries
// added, changed and deleted, and the maps replaced whole.
func mapEdits(log string) (entries, whole int) {
	for _, l := range strings.Split(mapLines(log), "\n") {
		for _, f := range strings.Fields(l) {
			k, v, _ := strings.Cut(f, "=")
			n, err := strconv.Atoi(v)
			switch {
			case err != nil:
			case k == "added" || k == "changed" || k == "deleted":
				entries += n
			case k == "replaced_whole":
				whole += n
			}
		}
	}
	return entries, whole
}

// mapLines are the lines of a controller's log saying what its passes
// changed in the maps without a reload.
func mapLines(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "changed without reload") && strings.Contains(l, "replaced_whole=") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// passLines are the "update" lines of a controller's log.
func passLines(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "msg=update") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
