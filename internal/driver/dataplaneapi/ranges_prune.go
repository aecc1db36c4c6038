package dataplaneapi

import (
	"context"
	"errors"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
)

// pruneRetry is the next attempt at deleting an unused file.
type pruneRetry struct {
	at   time.Time
	wait time.Duration
}

// Bounds of the wait between two attempts at deleting an unused file.
const (
	pruneRetryMin = 5 * time.Second
	pruneRetryMax = 10 * time.Minute
)

// pruneACLFiles deletes the files of frontends the pass's model does not
// restrict (a.text holds those it does: texts), and an older release's
// file of both families (aclOwner): the configuration, as the pass left
// it, no longer names them. A failure
// (409 while haproxy.cfg still names the file: someone else's section, or
// a write not made yet) is logged and tried again after a wait that
// doubles (pruneRetryMin to pruneRetryMax), or at once after the next
// reload (rangesReloaded): not by listing the storage again every pass.
func (d *Driver) pruneACLFiles(ctx context.Context) {
	a := &d.acl
	var now time.Time
	for name := range a.paths {
		if a.aclUsed(name) {
			delete(a.retry, name)
			continue
		}
		r, failed := a.retry[name]
		if failed {
			if now.IsZero() {
				now = d.now()
			}
			if now.Before(r.at) {
				continue
			}
		}
		err := d.c.DeleteGeneralFile(ctx, name)
		if err != nil && !errors.Is(err, dataplane.ErrNotFound) {
			r.wait = min(max(2*r.wait, pruneRetryMin), pruneRetryMax)
			if now.IsZero() {
				now = d.now()
			}
			r.at = now.Add(r.wait)
			if a.retry == nil {
				a.retry = map[string]pruneRetry{}
			}
			a.retry[name] = r
			d.log.Warn("deleting a source-range file no longer used; tried again later", "file", name, "retry_in", r.wait, "err", err)
			continue
		}
		delete(a.retry, name)
		delete(a.paths, name)
		delete(a.disk, name)
		delete(a.running, name)
	}
}
