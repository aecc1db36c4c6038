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

// Model records the desired configuration, whose size the metrics
// report: frontends, backends and servers by state. It only keeps cfg
// (models are not modified once built); the counting is done when
// Prometheus scrapes, not on every pass (a millisecond at 10,000
// Services).
func (i *Instance) Model(cfg model.Config) {
	if i == nil {
		return
	}
	cfg.Changes = nil // would keep the previous model alive
	i.mu.Lock()
	i.model = cfg
	i.mu.Unlock()
}

// modelCollector exports the size of each Instance's last model.
type modelCollector struct {
	r                                      *Registry
	frontends, backends, servers, services *prometheus.Desc
}

func newModelCollector(r *Registry) *modelCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
	}
	return &modelCollector{
		r:         r,
		frontends: d("frontends", "Frontends in the desired configuration.", "driver"),
		backends:  d("backends", "Service backends in the desired configuration (the _nodes backend not counted).", "driver"),
		servers:   d("servers", "Servers in the desired configuration, by state (ready, drain, maint).", "driver", "state"),
		services:  d("service_servers", "Servers of each Service's backends by state (only with per-Service metrics on).", "driver", "namespace", "service", "state"),
	}
}

func (c *modelCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.frontends
	ch <- c.backends
	ch <- c.servers
	if c.r.perService {
		ch <- c.services
	}
}

func (c *modelCollector) Collect(ch chan<- prometheus.Metric) {
	c.r.mu.Lock()
	insts := append([]*Instance(nil), c.r.instances...)
	c.r.mu.Unlock()
	for _, in := range insts {
		in.mu.Lock()
		cfg := in.model
		in.mu.Unlock()
		n := count(cfg, c.r.perService)
		ch <- prometheus.MustNewConstMetric(c.frontends, prometheus.GaugeValue, float64(len(cfg.Frontends)), in.name)
		ch <- prometheus.MustNewConstMetric(c.backends, prometheus.GaugeValue, float64(n.backends), in.name)
		for k, st := range ServerStates {
			ch <- prometheus.MustNewConstMetric(c.servers, prometheus.GaugeValue, n.servers[k], in.name, st)
		}
		for svc, sc := range n.perService {
			ns, name, _ := strings.Cut(svc, "/")
			for k, st := range ServerStates {
				ch <- prometheus.MustNewConstMetric(c.services, prometheus.GaugeValue, sc[k], in.name, ns, name, st)
			}
		}
	}
}

type counts struct {
	backends   int
	servers    [3]float64
	perService map[string]*[3]float64
}

// count sizes cfg. The _nodes backend (one server per node, for
// tracking) is not counted; a server that follows its node counts in its
// node's state.
func count(cfg model.Config, perService bool) counts {
	// Nodes out of service, by address: usually none, then no lookup.
	var nodeMaint map[[16]byte]struct{}
	c := counts{backends: len(cfg.Backends)}
	for bi := range cfg.Backends {
		b := cfg.Backends[bi]
		if b.Name != model.NodesBackend {
			continue
		}
		c.backends--
		for _, s := range b.Servers {
			if s.Maint {
				if nodeMaint == nil {
					nodeMaint = make(map[[16]byte]struct{})
				}
				nodeMaint[s.Addr.As16()] = struct{}{}
			}
		}
	}
	if perService {
		c.perService = map[string]*[3]float64{}
	}
	for bi := range cfg.Backends {
		b := cfg.Backends[bi]
		if b.Name == model.NodesBackend {
			continue
		}
		var sc *[3]float64
		if perService {
			if sc = c.perService[b.Service]; sc == nil {
				sc = new([3]float64)
				c.perService[b.Service] = sc
			}
		}
		for si := range b.Servers {
			s := &b.Servers[si]
			st := 0
			switch {
			case s.Maint || (b.TrackNodes && nodeMaint != nil && inMaint(nodeMaint, s.Addr)):
				st = 2
			case s.Drain:
				st = 1
			}
			c.servers[st]++
			if sc != nil {
				sc[st]++
			}
		}
	}
	return c
}

func inMaint(nodes map[[16]byte]struct{}, a netip.Addr) bool {
	_, ok := nodes[a.As16()]
	return ok
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
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.reasons == nil {
		i.reasons = make(map[string]bool)
		for _, rs := range RefusalReasons {
			i.reasons[rs] = true
		}
	}
	for rs := range refused {
		i.reasons[rs] = true // a reason this package does not list yet
	}
	for rs := range i.reasons { // every reason ever seen: back to 0 when gone
		i.r.refused.WithLabelValues(i.name, rs).Set(float64(refused[rs]))
	}
}

// NotReadyKept records how many NotReady nodes the last pass kept as
// servers because no node that may serve was Ready (fail open: the
// desired package's Result.NotReadyKept).
func (i *Instance) NotReadyKept(n int) {
	if i == nil {
		return
	}
	i.r.notReadyKept.WithLabelValues(i.name).Set(float64(n))
}
