// Package metrics holds the controller's Prometheus metrics, all named
// haproxy_k8s_sync_*, in a registry owned by the process (never the
// global default registry). Every driver reports through an Instance, so
// each series carries a "driver" label naming the driver instance
// (haproxy, dataplane, apiserver...). The label is not called "instance":
// Prometheus gives that name to the scrape target and would rename ours
// exported_instance. Methods of a nil *Instance do nothing: code that
// runs without metrics needs no checks.
package metrics

import (
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

// Namespace prefixes every metric name.
const Namespace = "haproxy_k8s_sync"

// Outcomes of a pass (label "outcome").
const (
	OutcomeApplied  = "applied"  // HAProxy runs the desired state
	OutcomeDeferred = "deferred" // servers applied, a reload held back to coalesce a burst
	OutcomeError    = "error"    // failed; retried through the workqueue
)

// Phases of a pass (label "phase").
const (
	PhaseParse   = "parse"   // objects → desired model
	PhaseRender  = "render"  // slots assigned, structure hashed, config rendered
	PhaseCheck   = "check"   // haproxy -c
	PhaseWrite   = "write"   // state file saved, config written and renamed
	PhaseReload  = "reload"  // master CLI reload until the new worker runs
	PhaseRuntime = "runtime" // Runtime API commands
)

// Options configure a Registry.
type Options struct {
	Version string // build version, in haproxy_k8s_sync_build_info
	// PerService adds series labelled with each Service (namespace,
	// service): one per Service and server state. Off by default: at
	// 10,000 Services that is tens of thousands of series.
	PerService bool
}

// Registry is the process's set of metrics.
type Registry struct {
	reg        *prometheus.Registry
	perService bool

	passDuration  *prometheus.HistogramVec
	phaseDuration *prometheus.HistogramVec
	reloads       *prometheus.CounterVec
	reloadFails   *prometheus.CounterVec
	cmdsSent      *prometheus.CounterVec
	cmdsFailed    *prometheus.CounterVec
	drift         *prometheus.CounterVec
	served        *prometheus.GaugeVec
	refused       *prometheus.GaugeVec
	lastSuccess   *prometheus.GaugeVec
	notReadyKept  *prometheus.GaugeVec
	fds           *prometheus.GaugeVec
	model         *modelCollector

	mu        sync.Mutex
	instances []*Instance
}

// New returns a Registry with the controller's metrics, Go runtime and
// process metrics, and the client-go workqueue metrics.
func New(opts Options) *Registry {
	r := &Registry{reg: prometheus.NewRegistry(), perService: opts.PerService}
	inst := []string{"driver"}
	durations := []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	r.passDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "pass_duration_seconds",
		Help:    "Duration of a pass (snapshot, desired state, apply), by outcome.",
		Buckets: durations,
	}, []string{"driver", "outcome"})
	r.phaseDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "phase_duration_seconds",
		Help:    "Duration of each phase of a pass that ran it (parse, render, check, write, reload, runtime).",
		Buckets: durations,
	}, []string{"driver", "phase"})
	r.reloads = counter("reloads_total", "HAProxy reloads that succeeded, by the first reason of each.", "driver", "reason")
	r.reloadFails = counter("reload_failures_total", "Reloads that failed (config rejected, reload failed or timed out), by the first reason of each.", "driver", "reason")
	r.cmdsSent = counter("runtime_commands_total", "Runtime API commands sent to HAProxy.", inst...)
	r.cmdsFailed = counter("runtime_command_failures_total", "Runtime API commands of batches that failed (rejected by HAProxy, or the socket failed).", inst...)
	r.drift = counter("resync_drift_corrections_total", "Periodic resyncs that found HAProxy's state differing from what was applied (the next pass corrects it).", inst...)
	r.served = gauge("services_served", "Services with at least one frontend.", inst...)
	r.refused = gauge("services_refused", "Services with a problem in the last pass, by reason (InvalidAnnotation includes Services kept on their last good settings).", "driver", "reason")
	r.lastSuccess = gauge("last_success_timestamp_seconds", "Unix time of the end of the last pass that applied the desired state.", inst...)
	r.notReadyKept = gauge("nodes_not_ready_kept", "NotReady nodes kept as servers because no node that may serve is Ready (fail open); 0 otherwise.", inst...)
	r.fds = gauge("haproxy_file_descriptors", "Open files the configuration of HAProxy's last reload (tried or refused) needs by HAProxy's own count (kind=needed), "+
		"and the limit HAProxy may raise itself to (kind=limit; 0: unknown).", "driver", "kind")
	r.model = newModelCollector(r)
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "build_info", Help: "Build information; always 1.",
		ConstLabels: prometheus.Labels{"version": opts.Version, "goversion": runtime.Version()},
	})
	build.Set(1)
	r.reg.MustRegister(r.passDuration, r.phaseDuration, r.reloads, r.reloadFails, r.cmdsSent, r.cmdsFailed,
		r.drift, r.served, r.refused, r.model, r.lastSuccess, r.notReadyKept, r.fds, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerWorkqueue(r.reg)
	return r
}

func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
}

func gauge(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, labels)
}

// Gatherer is the registry, for tests and for adding collectors.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// Register adds a collector of the caller (a driver's own metrics).
func (r *Registry) Register(c prometheus.Collector) error { return r.reg.Register(c) }

// Handler serves the registry in the Prometheus exposition format.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg})
}

// Instance returns the recorder of one driver; name becomes the value of
// the "driver" label. The series of every label value that alerts need
// (outcomes, phases, refusal reasons, server states) exist from the start
// with zero values.
func (r *Registry) Instance(name string) *Instance {
	for _, o := range []string{OutcomeApplied, OutcomeDeferred, OutcomeError} {
		r.passDuration.WithLabelValues(name, o)
	}
	r.cmdsSent.WithLabelValues(name)
	r.cmdsFailed.WithLabelValues(name)
	r.drift.WithLabelValues(name)
	for _, rs := range RefusalReasons {
		r.refused.WithLabelValues(name, rs)
	}
	in := &Instance{r: r, name: name}
	r.mu.Lock()
	r.instances = append(r.instances, in)
	r.mu.Unlock()
	return in
}

// Instance records what one driver does. Its methods are safe for
// concurrent use, and do nothing on a nil *Instance.
type Instance struct {
	r    *Registry
	name string

	mu          sync.Mutex
	lastOutcome string
	configured  bool            // a pass applied (or deferred a reload) once
	model       model.Config    // last desired model, counted when scraped
	reasons     map[string]bool // refusal reasons exported so far
}

// Pass records a pass of the given outcome and duration; an applied pass
// also sets the last success time.
func (i *Instance) Pass(outcome string, d time.Duration) {
	if i == nil {
		return
	}
	i.r.passDuration.WithLabelValues(i.name, outcome).Observe(d.Seconds())
	if outcome == OutcomeApplied {
		i.r.lastSuccess.WithLabelValues(i.name).Set(float64(time.Now().UnixNano()) / 1e9)
	}
	i.mu.Lock()
	i.lastOutcome = outcome
	i.configured = i.configured || outcome == OutcomeApplied || outcome == OutcomeDeferred
	i.mu.Unlock()
}

// Configured is whether a pass recorded applied (or deferred a reload)
// once: the driver runs a configuration of ours.
func (i *Instance) Configured() bool {
	if i == nil {
		return false
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.configured
}

// LastOutcome is the outcome of the last pass recorded, "" before any.
func (i *Instance) LastOutcome() string {
	if i == nil {
		return ""
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.lastOutcome
}

// Phase records how long a phase took; phases that did not run (zero
// duration) are not recorded.
func (i *Instance) Phase(phase string, d time.Duration) {
	if i == nil || d <= 0 {
		return
	}
	i.r.phaseDuration.WithLabelValues(i.name, phase).Observe(d.Seconds())
}

// Reload records one reload attempt with the reasons the driver gave for
// it (free text, see ReloadReason), successful or not.
func (i *Instance) Reload(reasons []string, ok bool) {
	if i == nil {
		return
	}
	reason := ReloadReason(reasons)
	if ok {
		i.r.reloads.WithLabelValues(i.name, reason).Inc()
	} else {
		i.r.reloadFails.WithLabelValues(i.name, reason).Inc()
	}
}

// RuntimeCommands records Runtime API commands sent, and how many of them
// failed.
func (i *Instance) RuntimeCommands(sent, failed int) {
	if i == nil {
		return
	}
	i.r.cmdsSent.WithLabelValues(i.name).Add(float64(sent))
	i.r.cmdsFailed.WithLabelValues(i.name).Add(float64(failed))
}

// Drift records a resync that found HAProxy's state differing.
func (i *Instance) Drift() {
	if i == nil {
		return
	}
	i.r.drift.WithLabelValues(i.name).Inc()
}
