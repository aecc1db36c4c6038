package runtimeapi

import "github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"

// noteVersion keeps the master's version a reload read and logs it when it
// is new to the driver (the first reload, an HAProxy upgraded under us),
// with how that master's reloads are confirmed. Called under d.mu.
func (d *HAProxy) noteVersion(r haproxy.ReloadResult) {
	if !r.Version.Known() || r.Version == d.version {
		return
	}
	d.version = r.Version
	how := "by polling show proc"
	if r.Version.SyncReload() {
		how = "by the master's answer"
	}
	d.log.Info("haproxy master version", "version", r.Version.Text, "reload_confirmed", how)
}
