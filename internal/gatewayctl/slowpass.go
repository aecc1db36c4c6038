package gatewayctl

import (
	"context"
	"log/slog"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/driver"
)

// slowPass: a pass taking longer logs a "slow pass" line at info with its
// parts (the snapshot, gateway.Compute, the source beside, the driver,
// the status hand-off), the wait since its first change, and the
// collections and allocation in it: what a slow pass spent its time on.
const slowPass = 50 * time.Millisecond

// slowParts are a pass's timed parts as log attributes.
type slowParts []any

// waitedFor is how long the first change a pass took waited for it (0:
// the pass took none, a resync).
func waitedFor(ctx context.Context, start time.Time) time.Duration {
	at := driver.ChangedAt(ctx)
	if at.IsZero() || at.After(start) {
		return 0
	}
	return start.Sub(at)
}

// logSlow logs parts if the pass that started at start took more than
// slowPass.
func logSlow(log *slog.Logger, start time.Time, parts slowParts) {
	if total := time.Since(start); total > slowPass {
		log.Info("slow pass", append(parts, "total", total)...)
	}
}
