package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// ReasonAnnounceRefused is the reason of the Warning Event the Services
// get when a router refuses the announcer's session (with
// --announce=bgp: its addresses do not reach that router).
const ReasonAnnounceRefused = "AnnounceRefused"

// RefusalEvents is told a refusal in one line (bgp.Refusal.Message) and
// records it as a Warning Event on each Service with a published
// address, as of the last pass (rec decides who emits: the leader, with
// --leader-elect).
func RefusalEvents(p *Publisher, rec record.EventRecorder) func(message string) {
	return func(message string) {
		if rec == nil || p == nil {
			return
		}
		p.mu.Lock()
		var out []*corev1.Service
		for _, s := range p.last {
			if len(p.addressesLocked(s)) > 0 {
				out = append(out, s)
			}
		}
		p.mu.Unlock()
		for _, s := range out {
			rec.Event(s, corev1.EventTypeWarning, ReasonAnnounceRefused, message)
		}
	}
}
