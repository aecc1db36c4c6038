package runtimeapi

import (
	"slices"
	"strconv"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
)

// noteVersion keeps the master's version a reload read and logs it when it
// is new to the driver (the first reload, an HAProxy upgraded under us),
// with how that master's reloads are confirmed. Called under d.mu.
func (d *HAProxy) noteVersion(r haproxy.ReloadResult) {
	if !r.Version.Known() || r.Version == d.version {
		return
	}
	d.version = r.Version
	d.learnVersion(r.Version) // dynamic.go
	how := "by polling show proc"
	if r.Version.SyncReload() {
		how = "by the master's answer"
	}
	d.log.Info("haproxy master version", "version", r.Version.Text, "reload_confirmed", how)
}

// newWorker reports whether pid (show info's) is one of the workers the
// master listed after a reload (any, when it listed none): a 2.7+ master
// confirms a reload while the previous worker may still answer on the
// stats socket, and with the same structure hash only its PID tells them
// apart.
func newWorker(pid string, workers []int) bool {
	if len(workers) == 0 {
		return true
	}
	n, err := strconv.Atoi(pid)
	return err == nil && slices.Contains(workers, n)
}
