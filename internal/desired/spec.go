package desired

import (
	"errors"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// ReasonInvalidSourceRanges: a Service's spec.loadBalancerSourceRanges or
// its annotation could not be read; the last good ranges stay.
const ReasonInvalidSourceRanges = "InvalidSourceRanges"

// serviceSettings is the settings of svc: its annotations over defaults,
// then what its spec asks that the model carries (source ranges, ClientIP
// affinity). Any error leaves defaults and all the errors, as
// settings.Apply does: the caller keeps the last good settings whole.
func serviceSettings(defaults settings.Settings, svc *corev1.Service) (settings.Settings, []error) {
	set, errs := settings.Apply(defaults, svc.Annotations)
	ranges, err := settings.ParseSourceRanges(svc.Spec.LoadBalancerSourceRanges, svc.Annotations[settings.SourceRangesAnnotation])
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return defaults, errs
	}
	set.SourceRanges = settings.FormatSourceRanges(ranges)
	set.Affinity = affinity(svc)
	return set, nil
}

// affinity is the ClientIP session affinity timeout of svc, 0 for none.
// The apiserver keeps timeoutSeconds within 1..86400; anything else (a
// hand-made object for render) takes the default.
func affinity(svc *corev1.Service) time.Duration {
	if svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP {
		return 0
	}
	d := settings.DefaultAffinityTimeout
	if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
		if t := time.Duration(*c.ClientIP.TimeoutSeconds) * time.Second; t > 0 && t <= settings.MaxAffinityTimeout {
			d = t
		}
	}
	return d
}

// settingsReason is the Event reason for errs of serviceSettings:
// InvalidSourceRanges when only the ranges are wrong.
func settingsReason(errs []error) string {
	for _, e := range errs {
		var re *settings.RangeError
		if !errors.As(e, &re) {
			return ReasonInvalidAnnotation
		}
	}
	return ReasonInvalidSourceRanges
}

// maxListed is how many errors a Problem's message lists; the rest are
// counted. A Service may carry thousands of bad annotations, and the
// message goes whole into an Event and a log line.
const maxListed = 10

// joinErrors lists the first maxListed of errs, "; " between them, and
// counts the others.
func joinErrors(errs []error) string {
	var b strings.Builder
	for i, e := range errs {
		if i == maxListed {
			b.WriteString("; and " + strconv.Itoa(len(errs)-maxListed) + " more")
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Error())
	}
	return b.String()
}
