package metrics

import "strings"

// Values of the "reason" label of reloads_total and reload_failures_total.
const (
	ReasonFrontendAdded   = "frontend_added"
	ReasonFrontendRemoved = "frontend_removed"
	ReasonFrontendChanged = "frontend_changed"
	ReasonBackendAdded    = "backend_added"
	ReasonBackendRemoved  = "backend_removed"
	ReasonBackendChanged  = "backend_changed"
	ReasonSlotsExhausted  = "slots_exhausted"
	ReasonSlotsResized    = "slots_resized"
	ReasonConfigDiffers   = "config_differs" // the running config is not the one last applied (restart, first pass)
	ReasonApplyReload     = "apply_mode_reload"
	ReasonOther           = "other"
)

// reasonPrefixes maps the start of a driver's free-text reason to its
// label value. Checked by the tests against what plan.Reasons and the
// HAProxy driver write.
var reasonPrefixes = []struct{ prefix, reason string }{
	{"running config ", ReasonConfigDiffers},
	{"frontend added ", ReasonFrontendAdded},
	{"frontend removed ", ReasonFrontendRemoved},
	{"frontend changed ", ReasonFrontendChanged},
	{"backend added ", ReasonBackendAdded},
	{"backend removed ", ReasonBackendRemoved},
	{"backend changed ", ReasonBackendChanged},
	{"server slots exhausted", ReasonSlotsExhausted},
	{"server slots resized", ReasonSlotsResized},
	{"servers changed (apply mode reload)", ReasonApplyReload},
}

// ReloadReason reduces the reasons a driver gave for one reload to one
// label value, so that each reload counts once: the reason that comes
// first in the order of reasonPrefixes (a restart before an added
// frontend before a changed backend...). No reasons, or none known,
// give "other".
func ReloadReason(reasons []string) string {
	best := len(reasonPrefixes)
	for _, r := range reasons {
		for k, p := range reasonPrefixes[:best] {
			if strings.HasPrefix(r, p.prefix) {
				best = k
				break
			}
		}
	}
	if best == len(reasonPrefixes) {
		return ReasonOther
	}
	return reasonPrefixes[best].reason
}
