package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/metrics"
)

// metricsFlags are the flags of the controller's own HTTP endpoints.
type metricsFlags struct {
	addr       string
	perService bool
	reg        *metrics.Registry
}

func (m *metricsFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&m.addr, "metrics-address", ":9742", "serve /metrics, /healthz and /readyz on this address; off when empty")
	fs.BoolVar(&m.perService, "metrics-per-service", false, "also export per-Service series (one per Service and server state: mind the cardinality)")
}

// instance returns the metrics recorder of a driver named name, or nil
// when metrics are off. The first call creates the registry, which must
// happen before any workqueue is created (see metrics.New).
func (m *metricsFlags) instance(name string) *metrics.Instance {
	if m.addr == "" {
		return nil
	}
	if m.reg == nil {
		m.reg = metrics.New(metrics.Options{Version: Version, PerService: m.perService})
	}
	return m.reg.Instance(name)
}

// claims returns the recorder of the address claims (internal/claims), or
// nil when metrics are off; called once, by the mode that claims.
func (m *metricsFlags) claims() *metrics.Claims {
	if m.addr == "" {
		return nil
	}
	if m.reg == nil {
		m.reg = metrics.New(metrics.Options{Version: Version, PerService: m.perService})
	}
	return m.reg.Claims()
}

// announce returns the recorder of the announcer named, or nil when
// metrics or the announcer are off; called once.
func (m *metricsFlags) announce(announcer string) *metrics.Announce {
	if m.addr == "" || announcer == "" {
		return nil
	}
	if m.reg == nil {
		m.reg = metrics.New(metrics.Options{Version: Version, PerService: m.perService})
	}
	return m.reg.Announce(announcer)
}

// serve listens on the metrics address (an error if it cannot) and serves
// until ctx ends:
//   - /metrics: the registry;
//   - /healthz: 200 while the process runs;
//   - /readyz: 200 when ready() returns nil, else 503 with its error.
func (m *metricsFlags) serve(ctx context.Context, ready func(context.Context) error, log *slog.Logger) error {
	if m.addr == "" {
		return nil
	}
	if m.reg == nil {
		m.reg = metrics.New(metrics.Options{Version: Version, PerService: m.perService})
	}
	l, err := net.Listen("tcp", m.addr)
	if err != nil {
		return fmt.Errorf("--metrics-address: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.reg.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := ready(r.Context()); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	log.Info("serving metrics and health", "address", l.Addr().String())
	return nil
}

// readiness is /readyz of a controller: the informer caches have synced,
// and either the last pass applied the desired state (or applied servers
// and deferred a reload) or HAProxy answers on its Runtime API socket. A
// controller whose passes fail because of one bad change is still ready
// while HAProxy serves; one that cannot reach HAProxy and cannot apply is
// not.
type readiness struct {
	synced    func() bool
	notSynced string // the reason while synced() is false; default: the informer caches
	inst      *metrics.Instance
	socket    string // worker admin socket
	// probe, when set, replaces the socket probe (the Data Plane API
	// driver asks the API).
	probe func(context.Context) error

	mu      sync.Mutex
	checked time.Time // last successful probe of the socket
}

// probeTTL: a successful socket probe counts for this long, so frequent
// probes do not open a connection each.
const probeTTL = 2 * time.Second

func (r *readiness) ready(ctx context.Context) error {
	if !r.synced() {
		if r.notSynced != "" {
			return errors.New(r.notSynced)
		}
		return errors.New("informer caches not synced")
	}
	switch r.inst.LastOutcome() {
	case metrics.OutcomeApplied, metrics.OutcomeDeferred:
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) < probeTTL {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if r.probe != nil {
		if err := r.probe(pctx); err != nil {
			return fmt.Errorf("last pass did not apply and the Data Plane API is unreachable: %w", err)
		}
		r.checked = time.Now()
		return nil
	}
	rt := haproxy.NewRuntime(r.socket)
	defer rt.Close()
	if _, err := rt.ShowInfo(pctx); err != nil {
		return fmt.Errorf("last pass did not apply and HAProxy is unreachable: %w", err)
	}
	r.checked = time.Now()
	return nil
}
