package runtimeapi

import (
	"fmt"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
)

// reloadBusyRetry is how long a pass whose reload a 3.1+ master refused
// (another reload still loading: haproxy.ErrReloadInProgress) is put off.
// The reload that is loading is someone else's (an operator's, or one of
// ours whose answer never came): a new worker starting takes from
// milliseconds to seconds with the configuration's size.
const reloadBusyRetry = time.Second

// reloadBusy is the outcome of a reload the master refused because another
// is still loading: nothing was reloaded, so it is no failure but a
// deferral (driver.ErrDeferred, errors.Is finds the cause too), and the
// loop gives the pass another turn after reloadBusyRetry without backoff.
// The state is unknown meanwhile (the reload that is loading may run
// another configuration): the next pass reads it back first.
func (d *HAProxy) reloadBusy(reasons []string, res *driver.Result, err error) error {
	res.RetryAfter = reloadBusyRetry
	d.log.Info("HAProxy is still loading another reload; reloading again later",
		"retry_in", reloadBusyRetry, "reasons", strings.Join(reasons, "; "), "answer", err)
	return fmt.Errorf("reload (%s): %w: %w", strings.Join(reasons, "; "), driver.ErrDeferred, err)
}
