package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/announce"
)

// errDraining: the host's health gate fails because its drain file
// exists (--announce-drain-file).
var errDraining = announce.ErrDraining

// drained is the health gate's readiness check with the drain file
// (--announce-drain-file) in front: while the file exists this host is
// not healthy to its announcer, which lets its addresses go (layer 2),
// withdraws its routes (BGP) or fails keepalived's tracked file, while
// its HAProxy still serves. A file left by the run before is removed
// first: a drain lasts until the file is removed or the controller
// restarts. The chart's preStop hook creates it, so that a Pod being
// replaced (its HAProxy with it) hands its addresses over before its
// HAProxy stops, rather than keeping them for a restart (docs/addresses.md).
func (a *announceFlags) drained(ready func(context.Context) error, log *slog.Logger) func(context.Context) error {
	file := a.drainFile
	if file == "" {
		return ready
	}
	switch err := os.Remove(file); {
	case err == nil:
		log.Info("drain file of the run before removed: this host serves again", "file", file)
	case !errors.Is(err, os.ErrNotExist):
		log.Warn("drain file of the run before not removed", "file", file, "error", err)
	}
	return func(ctx context.Context) error {
		if _, err := os.Stat(file); err == nil {
			return fmt.Errorf("%w: %s exists", errDraining, file)
		}
		return ready(ctx)
	}
}
