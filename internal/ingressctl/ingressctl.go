// Package ingressctl serves Ingresses beside the Gateways (run
// --mode=gateway --ingress-class): each pass of the gateway mode's loop
// compiles the cached Ingresses (internal/ingress) and merges them into
// the model (Add); once the drivers run that model (Applied) the served
// Ingresses' status.loadBalancer.ingress is written, by writers of its
// own (leader only, rate-limited), and the Warnings of the pass are
// recorded as Events on the Ingresses, each once while it holds.
package ingressctl

import (
	"context"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/loop"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/source"
)

// Options configure a Server.
type Options struct {
	Ingress ingress.Options
	// Client writes the Ingresses' status; nil: none is written.
	Client kubernetes.Interface
	QPS    float32 // status writes per second; <= 0: unlimited
	Burst  int
	// Recorder records the Warnings; nil: none.
	Recorder record.EventRecorder
	Logger   *slog.Logger
	// Pooled: run --address-pools; the class may name a pool (pool.go).
	Pooled bool
}

// cache is what a Server reads of the Gateway source (source.Gateway
// WithIngress): the cached IngressClasses and Ingresses.
type cache interface {
	Ingresses() ([]*netv1.IngressClass, []*netv1.Ingress)
	IngressObject(namespace, name string) (*netv1.Ingress, bool)
	IngressConfigMaps() map[ingress.Key]*corev1.ConfigMap
}

// Server is the Ingress source's part of the gateway mode's loop.
type Server struct {
	src     cache
	opts    Options
	log     *slog.Logger
	limiter flowcontrol.RateLimiter
	memo    ingress.Memo
	// the worker's alone: the last pass's result and Events.
	pending ingress.Result
	parts   []any // the last Add's (Parts)
	events  map[ingress.Event]bool
	metric  *prometheus.GaugeVec
	pool    poolState // the class's pool address (pool.go)

	mu      sync.Mutex
	applied map[ingress.Key][]string // what status should say, of the model that runs
	wake    loop.Wake
	// the keys to look at by the next enqueue (changed.go), or every
	// cached Ingress (full)
	dirty map[ingress.Key]struct{}
	full  bool
	from  unsafe.Pointer // the Served map applied last
	// poolAddrs: every pool address the class was served on (pool.go),
	// ours as status lists them.
	poolAddrs []string

	// looked counts the Ingresses enqueue compared (tests).
	looked int
}

// New returns a Server reading src (WithIngress).
func New(src *source.Gateway, opts Options) *Server {
	return newServer(src, opts)
}

func newServer(src cache, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{src: src, opts: opts, log: opts.Logger, wake: loop.NewWake(), events: map[ingress.Event]bool{},
		metric: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metrics.Namespace, Name: "ingress_annotations",
			Help: "Ingresses served carrying an annotation key that is not honoured, by key and verdict (unsupported: served without it; refused: the Ingress's last good version kept)."},
			[]string{"key", "verdict"})}
	if opts.QPS > 0 {
		s.limiter = flowcontrol.NewTokenBucketRateLimiter(opts.QPS, max(opts.Burst, 1))
	}
	return s
}

// Collector is the Server's metric, to register.
func (s *Server) Collector() prometheus.Collector { return s.metric }

// Add compiles the Ingresses with the objects of the pass's snapshot and
// merges them into cfg (ingress.Merge: HTTPRoutes first on a shared
// frontend). The Warnings are recorded now, each once while it holds.
func (s *Server) Add(cfg *model.Config, in gateway.Input) {
	start := time.Now()
	classes, ings := s.src.Ingresses()
	ii := ingress.Input{Classes: classes, Ingresses: ings, Services: in.Services, Slices: in.Slices,
		Certs: map[ingress.Key]*certs.Bundle{}, Problems: map[ingress.Key]string{}, Auth: map[ingress.Key][]byte{},
		CAs: map[ingress.Key][]byte{}, CAProblems: map[ingress.Key]string{}, ConfigMaps: s.src.IngressConfigMaps()}
	for _, sec := range in.Secrets {
		k := ingress.Key{Namespace: sec.Namespace, Name: sec.Name}
		if sec.Auth != nil {
			ii.Auth[k] = sec.Auth
		}
		switch {
		case sec.CA != nil:
			ii.CAs[k] = sec.CA // backend TLS
		case sec.CAProblem != "":
			ii.CAProblems[k] = sec.CAProblem
		}
		switch {
		case sec.Bundle != nil:
			ii.Certs[k] = sec.Bundle
		case !sec.ValidTLS:
			ii.Problems[k] = sec.Problem
		}
	}
	opts, serve := s.poolOptions(s.opts.Ingress) // pool.go
	opts.Last = &s.memo
	compileStart := time.Now()
	res := ingress.Compile(ii, opts)
	if !serve { // the class's own address not there (yet): nowhere
		res.Frontends, res.Backends, res.Served = nil, nil, map[ingress.Key][]netip.Addr{}
	}
	mergeStart := time.Now()
	for _, c := range ingress.Merge(cfg, res) {
		s.log.Warn("ingress: " + c)
		// Not served: status must not say so. (A new map: the
		// Result's may be the compiler's memo's.)
		res.Served = map[ingress.Key][]netip.Addr{}
	}
	s.pending = res
	s.report(res, ii.ConfigMaps)
	s.parts = []any{"ingress_input", compileStart.Sub(start), "ingress_compile", mergeStart.Sub(compileStart),
		"ingress_merge", time.Since(mergeStart), "ingress_whole", s.memo.Whole()}
}

// Parts are the last Add's timed parts, as log attributes: the input
// read, the compile, the merge into the model and the report, and why
// the compile was a whole pass ("" when it patched the last).
func (s *Server) Parts() []any { return s.parts }

// report records the pass's Events that the last pass did not have, logs
// them, and sets the annotation metric. The Events on ConfigMaps (the
// controller-wide headers') are recorded on cms's objects.
func (s *Server) report(res ingress.Result, cms map[ingress.Key]*corev1.ConfigMap) {
	now := make(map[ingress.Event]bool, len(res.Events))
	for _, e := range res.Events {
		now[e] = true
		if s.events[e] {
			continue
		}
		s.log.Warn("ingress: "+e.Message, "ingress", e.Ingress.String(), "reason", e.Reason)
		if s.opts.Recorder == nil {
			continue
		}
		if o, ok := s.src.IngressObject(e.Ingress.Namespace, e.Ingress.Name); ok {
			s.opts.Recorder.Event(o, corev1.EventTypeWarning, e.Reason, e.Message)
		}
	}
	for _, e := range res.ConfigMapEvents {
		now[e] = true
		if s.events[e] {
			continue
		}
		s.log.Warn("ingress: "+e.Message, "configmap", e.Ingress.String(), "reason", e.Reason)
		if cm := cms[e.Ingress]; cm != nil && s.opts.Recorder != nil {
			s.opts.Recorder.Event(cm, corev1.EventTypeWarning, e.Reason, e.Message)
		}
	}
	s.events = now
	s.metric.Reset()
	for v, keys := range res.Annotations {
		for k, n := range keys {
			s.metric.WithLabelValues(k, string(v)).Set(float64(n))
		}
	}
}

// Applied says the model of the last Add runs: the served Ingresses'
// status may now list the addresses. The writers are woken when that
// changed what some Ingress's status should say (changed.go).
func (s *Server) Applied() { s.appliedServed(s.pending.Served) }

// AppliedLater is Applied for the model of the last Add, called when
// that model runs on every --instance (gatewayctl's appliedBook), maybe
// after later passes: it holds that pass's served Ingresses.
func (s *Server) AppliedLater() func() {
	served := s.pending.Served
	return func() { s.appliedServed(served) }
}

func (s *Server) appliedServed(served map[ingress.Key][]netip.Addr) {
	s.mu.Lock()
	changed := s.applyLocked(served)
	s.mu.Unlock()
	if changed {
		s.wake.Poke()
	}
}

// addrText is the text of the addresses of the last call: every served
// Ingress lists the same (Options.Addresses), so it is made once a pass,
// not once an Ingress.
type addrText struct {
	addrs []netip.Addr
	ips   []string
}

func (t *addrText) of(addrs []netip.Addr) []string {
	if t.ips == nil || !slices.Equal(addrs, t.addrs) {
		t.ips = make([]string, 0, len(addrs))
		for _, a := range addrs {
			t.ips = append(t.ips, a.String())
		}
		t.addrs = addrs
	}
	return t.ips
}

// Run writes the Ingresses' status until ctx ends (under leader
// election, while this replica leads).
func (s *Server) Run(ctx context.Context) {
	if s.opts.Client == nil {
		return
	}
	s.lookAtEverything() // a new leader looks at every Ingress
	loop.Writers[ingress.Key]{
		Name: "haproxy-k8s-sync-ingress-status", Workers: 2, Wake: s.wake,
		Enqueue: s.enqueue, Write: s.write,
		OnError: func(k ingress.Key, err error, retries int) {
			s.log.Warn("could not write an Ingress's status; will retry", "ingress", k.String(), "err", err, "retries", retries)
		},
	}.Run(ctx)
}
