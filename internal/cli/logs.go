package cli

import (
	"log/slog"

	"k8s.io/klog/v2"
)

// routeKlog sends what client-go and other Kubernetes libraries log through
// klog (a reflector's "Failed to watch" when the CA is wrong, say) to log,
// so every line of the process has one format: --log-format json gives
// only JSON lines. klog's V(n) lines get slog level -n, so --log-level
// debug (-4) shows V(0) to V(4). klog is global: the last caller wins.
func routeKlog(log *slog.Logger) {
	klog.SetSlogLogger(log)
}
