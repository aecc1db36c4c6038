package metrics

import "github.com/prometheus/client_golang/prometheus"

// Announce records an address announcer (internal/announce/bgp). Methods
// of a nil *Announce do nothing.
type Announce struct {
	addresses prometheus.Gauge
	sessions  prometheus.Gauge
}

// Announce returns the recorder of the announcer named (label
// "announcer": bgp); its series exist from the call. Call it once.
func (r *Registry) Announce(announcer string) *Announce {
	l := prometheus.Labels{"announcer": announcer}
	a := &Announce{
		addresses: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "announced_addresses", ConstLabels: l,
			Help: "Addresses this host announces now (BGP: routes announced to its routers; 0 while its health gate fails)."}),
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "announce_sessions_up", ConstLabels: l,
			Help: "Sessions with the routers that are up (BGP: established)."}),
	}
	r.reg.MustRegister(a.addresses, a.sessions)
	return a
}

// Addresses sets the number of addresses announced.
func (a *Announce) Addresses(n int) {
	if a != nil {
		a.addresses.Set(float64(n))
	}
}

// Sessions sets the number of sessions up.
func (a *Announce) Sessions(n int) {
	if a != nil {
		a.sessions.Set(float64(n))
	}
}
