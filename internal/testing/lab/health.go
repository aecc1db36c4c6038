package lab

import (
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// HealthServer stands in for kube-proxy's health endpoints on a node
// (GET /healthz on :10256, GET / on a Service's healthCheckNodePort): it
// answers any GET with 200 while healthy, 503 otherwise (kube-proxy answers
// 503 while its node is drained or deleted, or has no local endpoint).
type HealthServer struct {
	healthy atomic.Bool
	srv     *http.Server
	done    chan struct{}
}

// NewHealthServer listens on addr (IP:PORT in 127.0.0.0/8), healthy.
func NewHealthServer(addr string) (*HealthServer, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	h := &HealthServer{done: make(chan struct{})}
	h.healthy.Store(true)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, _ *http.Request) {
		if h.healthy.Load() {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	h.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(h.done)
		if err := h.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return
		}
	}()
	return h, nil
}

// SetHealthy makes /healthz answer 200 (true) or 503 (false).
func (h *HealthServer) SetHealthy(ok bool) { h.healthy.Store(ok) }

// Close stops the server.
func (h *HealthServer) Close() {
	_ = h.srv.Close()
	<-h.done
}
