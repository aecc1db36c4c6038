package metrics

import (
	"net/netip"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Announce records an address announcer (internal/announce/layer2 and
// bgp). Methods
// of a nil *Announce do nothing.
type Announce struct {
	addresses prometheus.Gauge
	sessions  prometheus.Gauge
	address   *prometheus.GaugeVec
	refusals  *prometheus.CounterVec
	mu        sync.Mutex
	held      map[netip.Addr]bool
}

// Announce returns the recorder of the announcer named (label
// "announcer": l2 or bgp); its series exist from the call. Call it once.
func (r *Registry) Announce(announcer string) *Announce {
	l := prometheus.Labels{"announcer": announcer}
	a := &Announce{
		addresses: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "announced_addresses", ConstLabels: l,
			Help: "Addresses this host announces now (BGP: routes advertised to a router whose session is established; 0 while its health gate fails)."}),
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "announce_sessions_up", ConstLabels: l,
			Help: "Sessions with the routers that are up (BGP: established)."}),
		address: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "announced_address", ConstLabels: l,
			Help: "1 for each address this host announces now (layer 2: owns; BGP: advertises to an established router), by address; summed over the hosts, who announces each."},
			[]string{"address"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "announce_refusals_total", ConstLabels: l,
			Help: "Sessions a router refused (BGP: a NOTIFICATION received or sent, a peer AS other than configured, a malformed message), by router and reason."},
			[]string{"peer", "reason"}),
		held: map[netip.Addr]bool{},
	}
	r.reg.MustRegister(a.addresses, a.sessions, a.address, a.refusals)
	return a
}

// Held sets which addresses this host announces: a series for each, and
// none for the others (an address let go loses its series).
func (a *Announce) Held(addrs []netip.Addr) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := make(map[netip.Addr]bool, len(addrs))
	for _, ad := range addrs {
		now[ad] = true
		if !a.held[ad] {
			a.address.WithLabelValues(ad.String()).Set(1)
		}
	}
	for ad := range a.held {
		if !now[ad] {
			a.address.DeleteLabelValues(ad.String())
		}
	}
	a.held = now
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

// Refused counts a session the router peer refused, and why
// (bgp.RefusalRecorder).
func (a *Announce) Refused(peer, reason string) {
	if a != nil {
		a.refusals.WithLabelValues(peer, reason).Inc()
	}
}
