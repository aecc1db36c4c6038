// Package dataplanetest is an in-memory stand-in for the HAProxy Data Plane
// API v3, for tests and benchmarks: the real API cannot be installed on the
// project's machines. It follows the public OpenAPI specification and the
// behaviour measured against the real API v3.4.0 with HAProxy 2.6 (see
// docs/dataplane.md) for every endpoint the Data Plane API driver uses:
// configuration versions, transactions, reloads, the configuration of
// frontends, binds, backends and servers, and the runtime server
// endpoints. It rejects what the real API rejects and reloads when the
// real API reloads. HAProxy itself is modelled: a reload "runs" the
// configuration, binds the frontends' loopback addresses for real (so a
// busy port fails the reload as it does in HAProxy), and resets the
// runtime state of servers.
package dataplanetest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configure a Server.
type Options struct {
	// Users are the basic-auth credentials accepted; Tokens the bearer
	// tokens. With neither, every request is accepted.
	Users  map[string]string
	Tokens []string
	// ReloadDelay is the API's reload_delay: commits within it share one
	// reload (default 20ms; the real API's default is 5s).
	ReloadDelay time.Duration
	// MaxOpen is the number of in-progress transactions allowed (20).
	MaxOpen int
	// Cost is how long requests take (none by default; MeasuredCost is
	// the real API's).
	Cost Cost
}

// Server is a running test API. Its methods are safe for concurrent use.
type Server struct {
	URL  string
	opts Options
	http *httptest.Server

	wmu       sync.Mutex // versioned writes, one at a time (with a Cost)
	rmu       sync.Mutex // runtime requests, one at a time (with a Cost)
	mu        sync.Mutex
	version   int64
	cfg       *config // what the API holds (and writes to haproxy.cfg)
	other     string  // haproxy.cfg's sections other than proxies, as posted raw ("": defaultOther)
	running   *config // what HAProxy runs: the config of the last good reload
	runtime   map[string]map[string]*rtServer
	rtAdded   map[string][]string // backend → servers added at runtime
	txs       map[string]*tx
	reloads   []*reload
	pending   *reload
	seq       int
	pid       int64 // HAProxy's worker
	listeners map[string]net.Listener
	closed    bool
	acl       aclState // the general storage and the worker's ACLs (acls.go)
}

type tx struct {
	id, status string
	version    int64
	cfg        *config
}

type reload struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	Response  string `json:"response,omitempty"`
	Timestamp int64  `json:"reload_timestamp"`
}

// Start starts a server on a free loopback port; it stops with the test.
func Start(t interface{ Cleanup(func()) }, opts Options) *Server {
	if opts.ReloadDelay <= 0 {
		opts.ReloadDelay = 20 * time.Millisecond
	}
	if opts.MaxOpen <= 0 {
		opts.MaxOpen = 20
	}
	s := &Server{opts: opts, version: 1, cfg: newConfig(), running: newConfig(), pid: 1000,
		runtime: map[string]map[string]*rtServer{}, rtAdded: map[string][]string{}, txs: map[string]*tx{}, listeners: map[string]net.Listener{}}
	s.http = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.http.URL
	t.Cleanup(s.Close)
	return s
}

// Close stops the server and releases the addresses its "HAProxy" bound.
func (s *Server) Close() {
	s.http.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for k, l := range s.listeners {
		l.Close()
		delete(s.listeners, k)
	}
	s.pending = nil
}

type apiErr struct {
	status int
	msg    string
}

func errf(status int, format string, a ...any) *apiErr {
	return &apiErr{status, fmt.Sprintf(format, a...)}
}

func (s *Server) reply(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Configuration-Version", strconv.FormatInt(s.version, 10))
	w.WriteHeader(status)
	if body != nil {
		_ = json.NewEncoder(w).Encode(body)
	}
}

func (s *Server) fail(w http.ResponseWriter, e *apiErr) {
	s.reply(w, e.status, map[string]any{"code": e.status, "message": e.msg})
}

func (s *Server) authorized(r *http.Request) bool {
	if len(s.opts.Users) == 0 && len(s.opts.Tokens) == 0 {
		return true
	}
	if u, p, ok := r.BasicAuth(); ok {
		want, found := s.opts.Users[u]
		return found && want == p
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		for _, t := range s.opts.Tokens {
			if t == tok {
				return true
			}
		}
	}
	return false
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if s.opts.Cost != (Cost{}) {
		// Writes wait for each other, not reads or runtime requests.
		if release := s.spend(r); release != nil {
			defer release()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.authorized(r) {
		s.fail(w, errf(http.StatusUnauthorized, "unauthenticated for invalid credentials"))
		return
	}
	p, ok := strings.CutPrefix(r.URL.Path, "/v3/services/haproxy/")
	if !ok {
		s.fail(w, errf(http.StatusNotFound, "path %s was not found", r.URL.Path))
		return
	}
	seg := strings.Split(strings.Trim(p, "/"), "/")
	if len(seg) == 2 && seg[0] == "configuration" && seg[1] == "raw" {
		s.rawEndpoint(w, r)
		return
	}
	if s.aclEndpoint(w, r) || s.httpChecksEndpoint(w, r, seg) {
		return
	}
	var body Object
	if r.Method == http.MethodPost || r.Method == http.MethodPut {
		dec := json.NewDecoder(r.Body)
		dec.UseNumber()
		if err := dec.Decode(&body); err != nil && seg[0] == "configuration" {
			s.fail(w, errf(http.StatusBadRequest, "parsing request body failed: %v", err))
			return
		}
	}
	switch seg[0] {
	case "configuration":
		s.configuration(w, r, seg[1:], body)
	case "transactions":
		s.transactions(w, r, seg[1:])
	case "reloads":
		s.reloadsEndpoint(w, r, seg[1:])
	case "runtime":
		s.runtimeEndpoint(w, r, seg[1:], body)
	default:
		s.fail(w, errf(http.StatusNotFound, "path %s was not found", r.URL.Path))
	}
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Reloads is the number of reloads HAProxy went through (failed ones too).
func (s *Server) Reloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.reloads {
		if r.Status != "in_progress" {
			n++
		}
	}
	return n
}

// Version is the configuration version.
func (s *Server) Version() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// OpenTransactions counts the transactions in progress.
func (s *Server) OpenTransactions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.openCount()
}

func (s *Server) openCount() int {
	n := 0
	for _, t := range s.txs {
		if t.status == "in_progress" {
			n++
		}
	}
	return n
}
