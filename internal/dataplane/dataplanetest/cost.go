package dataplanetest

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"time"
)

// Cost is the time the API takes to answer, as a fixed part plus a part
// per backend of the configuration: the real API parses, rewrites and
// validates the whole haproxy.cfg at each versioned write, so its cost
// grows with the configuration. Versioned writes (and commits) wait for
// each other, as in the real API, and so do runtime requests, but neither
// waits for the other, nor do reads. The zero Cost answers at once (the
// default: unit tests stay fast); MeasuredCost is the real API's.
type Cost struct {
	Write, WritePerBackend     time.Duration // a write outside any transaction (?version=)
	TxWrite, TxWritePerBackend time.Duration // a write inside a transaction
	Commit, CommitPerBackend   time.Duration // committing a transaction (not the reload)
	Raw, RawPerBackend         time.Duration // a POST of the raw configuration
	Runtime                    time.Duration // a request to a runtime endpoint (one at a time)
}

// MeasuredCost is the real Data Plane API v3.4.0 with HAProxy 2.6.12 on the
// project's 2-core machines, sequential requests, a configuration of N
// class-mode backends of 8 servers (docs/dataplane.md): a server PUT
// outside a transaction took a median 73 ms at N=1, 87 ms at 100, 182 ms at
// 300, 613 ms at 1,000; a server PUT inside a transaction 3.7, 5.2, 11.6,
// 29.7 ms; a commit 70-300 ms; a runtime request 1-3 ms at every N (and
// 1.5-10 ms while a versioned write was under way), and 50 of them took
// about as long four at a time as one after the other; a POST of the raw
// configuration 0.17 s with 2 backends, 0.42-0.47 s with 1,001; 250
// runtime PUTs at 1,000 backends 0.2-0.55 s whether 1, 4, 8 or 16 at a
// time, and the benchmark's node changes at 1,000 Services (250 runtime
// requests) 0.27-0.55 s per pass (load average 10-15): 1.1 ms each.
var MeasuredCost = Cost{
	Write: 60 * time.Millisecond, WritePerBackend: 550 * time.Microsecond,
	TxWrite: 3 * time.Millisecond, TxWritePerBackend: 27 * time.Microsecond,
	Commit: 60 * time.Millisecond, CommitPerBackend: 250 * time.Microsecond,
	Raw: 150 * time.Millisecond, RawPerBackend: 300 * time.Microsecond,
	Runtime: 1100 * time.Microsecond,
}

// spend waits as long as the request would take the real API. A versioned
// write holds the write lock meanwhile; spend returns its release (or nil).
func (s *Server) spend(r *http.Request) (release func()) {
	path := strings.TrimPrefix(r.URL.Path, "/v3/services/haproxy/")
	switch {
	case strings.HasPrefix(path, "runtime/"):
		s.rmu.Lock()
		sleep(s.opts.Cost.Runtime)
		return s.rmu.Unlock
	case r.Method == http.MethodGet:
		return nil
	case strings.HasPrefix(path, "storage/"):
		// A stored file written: 1.3-2 ms whatever the configuration's
		// size (1.7 ms at 1,000 backends), no lock: as a runtime request.
		sleep(s.opts.Cost.Runtime)
		return nil
	}
	var fixed, per time.Duration
	switch {
	case strings.HasPrefix(path, "transactions/") && r.Method == http.MethodPut:
		fixed, per = s.opts.Cost.Commit, s.opts.Cost.CommitPerBackend
	case !strings.HasPrefix(path, "configuration/"):
		return nil
	case path == "configuration/raw":
		fixed, per = s.opts.Cost.Raw, s.opts.Cost.RawPerBackend
	case r.URL.Query().Get("transaction_id") != "":
		fixed, per = s.opts.Cost.TxWrite, s.opts.Cost.TxWritePerBackend
	default:
		fixed, per = s.opts.Cost.Write, s.opts.Cost.WritePerBackend
	}
	raw := 0
	if path == "configuration/raw" {
		// The whole file is parsed and validated: its size after the
		// write counts (an initial sync posts every backend at once).
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		raw = bytes.Count(body, []byte("\nbackend "))
	}
	s.wmu.Lock()
	s.mu.Lock()
	n := max(s.cfg.backends.len(), raw)
	if t := s.txs[r.URL.Query().Get("transaction_id")]; t != nil {
		n = t.cfg.backends.len() // the configuration the transaction writes
	}
	s.mu.Unlock()
	sleep(fixed + time.Duration(n)*per)
	return s.wmu.Unlock
}

func sleep(d time.Duration) {
	if d > 0 {
		time.Sleep(d)
	}
}
