package cli

import (
	"log/slog"
	"runtime/debug"
)

// defaultGCPercent is the collector's target when the environment sets
// neither GOGC nor GOMEMLIMIT: the heap may grow by a quarter of its live size
// between collections instead of doubling. The controller's live heap is
// mostly its informer caches and the model (about 55 MiB at 10,000
// Services); doubling it was most of its peak RSS.
const defaultGCPercent = 25

// tuneGC applies defaultGCPercent unless the operator tuned the collector
// through the environment, and reports the setting in force.
func tuneGC(getenv func(string) string, log *slog.Logger) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		log.Info("garbage collector tuned by the environment", "GOGC", getenv("GOGC"), "GOMEMLIMIT", getenv("GOMEMLIMIT"))
		return
	}
	debug.SetGCPercent(defaultGCPercent)
}
