package metrics

import (
	"net/netip"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Server states (label "state") as the controller asks HAProxy for them;
// whether HAProxy's health checks find a server up is on HAProxy's own
// exporter (--stats-address).
const (
	StateReady = "ready"
	StateDrain = "drain"
	StateMaint = "maint"
)

// ServerStates lists the values of the "state" label.
var ServerStates = []string{StateReady, StateDrain, StateMaint}

// Model records the size of the desired configuration: frontends,
// backends and servers by state. The _nodes backend (one server per node,
// for tracking) is not counted; a server that follows its node counts in
// its node's state.
func (i *Instance) Model(cfg model.Config) {
	if i == nil {
		return
	}
	nodeMaint := make(map[netip.Addr]bool)
	n := len(cfg.Backends)
	for _, b := range cfg.Backends {
		if b.Name == model.NodesBackend {
			n--
			for _, s := range b.Servers {
				nodeMaint[s.Addr] = s.Maint
			}
		}
	}
	var counts [3]float64
	perSvc := map[string]*[3]float64{}
	for _, b := range cfg.Backends {
		if b.Name == model.NodesBackend {
			continue
		}
		var sc *[3]float64
		if i.r.perService {
			if sc = perSvc[b.Service]; sc == nil {
				sc = new([3]float64)
				perSvc[b.Service] = sc
			}
		}
		for _, s := range b.Servers {
			st := 0
			switch {
			case s.Maint || (b.TrackNodes && nodeMaint[s.Addr]):
				st = 2
			case s.Drain:
				st = 1
			}
			counts[st]++
			if sc != nil {
				sc[st]++
			}
		}
	}
	i.r.frontends.WithLabelValues(i.name).Set(float64(len(cfg.Frontends)))
	i.r.backends.WithLabelValues(i.name).Set(float64(n))
	for k, st := range ServerStates {
		i.r.servers.WithLabelValues(i.name, st).Set(counts[k])
	}
	if i.r.perService {
		i.r.svcServers.DeletePartialMatch(prometheus.Labels{"driver": i.name})
		for svc, sc := range perSvc {
			ns, name, _ := strings.Cut(svc, "/")
			for k, st := range ServerStates {
				i.r.svcServers.WithLabelValues(i.name, ns, name, st).Set(sc[k])
			}
		}
	}
}

// RefusalReasons lists the values of the "reason" label of
// services_refused: the desired package's Problem reasons.
var RefusalReasons = []string{desired.ReasonInvalidAnnotation, desired.ReasonPortConflict, desired.ReasonUnsupportedProtocol, desired.ReasonNoNodePort}

// Services records how many Services are served and how many have a
// problem of each reason (a Service counts once per reason).
func (i *Instance) Services(served int, refused map[string]int) {
	if i == nil {
		return
	}
	i.r.served.WithLabelValues(i.name).Set(float64(served))
	for _, rs := range RefusalReasons {
		i.r.refused.WithLabelValues(i.name, rs).Set(float64(refused[rs]))
	}
	for rs, n := range refused {
		i.r.refused.WithLabelValues(i.name, rs).Set(float64(n))
	}
}
