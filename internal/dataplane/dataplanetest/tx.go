package dataplanetest

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"
)

// transactions serves /v3/services/haproxy/transactions[/{id}].
func (s *Server) transactions(w http.ResponseWriter, r *http.Request, seg []string) {
	if len(seg) == 0 {
		switch r.Method {
		case http.MethodGet:
			out := []map[string]any{}
			for _, t := range s.txs {
				out = append(out, t.json())
			}
			s.reply(w, http.StatusOK, out)
		case http.MethodPost:
			vs := r.URL.Query().Get("version")
			v, err := strconv.ParseInt(vs, 10, 64)
			if err != nil {
				s.fail(w, errf(http.StatusBadRequest, "version is required to open a transaction"))
				return
			}
			if v != s.version {
				s.fail(w, errf(http.StatusConflict, "version mismatch: version in configuration file is %d, given version is %d", s.version, v))
				return
			}
			if s.openCount() >= s.opts.MaxOpen {
				s.fail(w, errf(http.StatusTooManyRequests, "cannot start a new transaction, reached the maximum of %d open transactions", s.opts.MaxOpen))
				return
			}
			t := &tx{id: newID(), status: "in_progress", version: v, cfg: s.cfg.clone()}
			s.txs[t.id] = t
			s.reply(w, http.StatusCreated, t.json())
		default:
			s.fail(w, errf(http.StatusMethodNotAllowed, "method not allowed"))
		}
		return
	}
	t := s.txs[seg[0]]
	if t == nil || len(seg) > 1 {
		s.fail(w, errf(http.StatusNotFound, "transaction %s does not exist", seg[0]))
		return
	}
	switch r.Method {
	case http.MethodGet:
		s.reply(w, http.StatusOK, t.json())
	case http.MethodDelete:
		delete(s.txs, t.id)
		s.reply(w, http.StatusNoContent, nil)
	case http.MethodPut:
		s.commit(w, r, t)
	default:
		s.fail(w, errf(http.StatusMethodNotAllowed, "method not allowed"))
	}
}

func (t *tx) json() map[string]any {
	return map[string]any{"id": t.id, "status": t.status, "_version": t.version}
}

// commit is PUT /transactions/{id}. As in the real API: a transaction
// already marked outdated or failed answers 406; one whose version is no
// longer the configuration's (a write outside any transaction moved it)
// answers 409 "version mismatch" and only then is marked outdated; a
// commit marks every other transaction in progress outdated.
func (s *Server) commit(w http.ResponseWriter, r *http.Request, t *tx) {
	switch t.status {
	case "outdated":
		s.fail(w, errf(http.StatusNotAcceptable, "transaction %s is outdated and cannot be committed", t.id))
		return
	case "failed":
		s.fail(w, errf(http.StatusNotAcceptable, "transaction %s is failed and cannot be committed", t.id))
		return
	}
	if t.version != s.version {
		t.status = "outdated"
		s.fail(w, errf(http.StatusConflict, "version mismatch, transaction version: %d, configured version: %d", t.version, s.version))
		return
	}
	if err := s.check(t.cfg); err != nil {
		t.status = "failed"
		s.fail(w, errf(http.StatusBadRequest, "validation error: %v", err))
		return
	}
	// Committed: even an empty transaction bumps the version and reloads.
	s.cfg = t.cfg
	s.version++
	delete(s.txs, t.id)
	t.status = "success"
	for _, o := range s.txs {
		if o.status == "in_progress" && o.version <= t.version {
			o.status = "outdated"
		}
	}
	if r.URL.Query().Get("force_reload") == "true" {
		s.reloadNow()
		s.reply(w, http.StatusOK, t.json())
		return
	}
	w.Header().Set("Reload-Id", s.scheduleReload())
	s.reply(w, http.StatusAccepted, t.json())
}

// scheduleReload returns the id of the reload that will pick up the
// current configuration: changes within one reload delay share it.
func (s *Server) scheduleReload() string {
	if s.pending != nil {
		return s.pending.ID
	}
	s.seq++
	rl := &reload{ID: time.Now().UTC().Format("2006-01-02") + "-" + strconv.Itoa(s.seq), Status: "in_progress"}
	s.reloads = append(s.reloads, rl)
	s.pending = rl
	time.AfterFunc(s.opts.ReloadDelay, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.pending == rl && !s.closed {
			s.execute(rl)
		}
	})
	return rl.ID
}

func (s *Server) reloadNow() {
	if s.pending == nil {
		s.scheduleReload()
	}
	s.execute(s.pending)
}

// execute is HAProxy reloading with the API's configuration. A new worker
// that cannot bind its addresses fails; the old one keeps serving what it
// ran, while the API keeps the failed change in memory (and tries it again
// at every later reload, as the real API does).
func (s *Server) execute(rl *reload) {
	s.pending = nil
	rl.Timestamp = time.Now().Unix()
	want := s.cfg.bindAddrs()
	opened := map[string]net.Listener{}
	for _, a := range want {
		if _, held := s.listeners[a]; held {
			continue
		}
		ap, err := netip.ParseAddrPort(a)
		if err != nil || !ap.Addr().IsLoopback() {
			continue // only loopback addresses are really bound here
		}
		l, err := net.Listen("tcp", a)
		if err != nil {
			for _, o := range opened {
				o.Close()
			}
			rl.Status = "failed"
			rl.Response = fmt.Sprintf("[ALERT] Starting proxy: cannot bind socket (Address already in use) [%s]\nexit status 1", a)
			return
		}
		opened[a] = l
	}
	keep := map[string]bool{}
	for _, a := range want {
		keep[a] = true
	}
	for a, l := range s.listeners {
		if !keep[a] {
			l.Close()
			delete(s.listeners, a)
		}
	}
	for a, l := range opened {
		s.listeners[a] = l
		go s.accept(a, l)
	}
	s.running = s.cfg.clone()
	s.resetRuntime()
	rl.Status = "succeeded"
	rl.Response = "reloaded"
}

// reloadsEndpoint serves /v3/services/haproxy/reloads[/{id}].
func (s *Server) reloadsEndpoint(w http.ResponseWriter, r *http.Request, seg []string) {
	if r.Method != http.MethodGet {
		s.fail(w, errf(http.StatusMethodNotAllowed, "method not allowed"))
		return
	}
	if len(seg) == 0 {
		s.reply(w, http.StatusOK, s.listReloads())
		return
	}
	if rl := s.findReload(seg[0]); rl != nil {
		s.reply(w, http.StatusOK, rl)
		return
	}
	s.fail(w, errf(http.StatusNotFound, "reload %s not found", seg[0]))
}

// listReloads is what the real API lists: the failed reloads, the last
// successful one and any in progress, not every reload (so counting its
// entries does not count reloads: Reloads does).
func (s *Server) listReloads() []*reload {
	out := []*reload{}
	var last, pending *reload
	for _, rl := range s.reloads {
		switch rl.Status {
		case "failed":
			out = append(out, rl)
		case "succeeded":
			last = rl
		default:
			pending = rl
		}
	}
	if last != nil {
		out = append(out, last)
	}
	if pending != nil {
		out = append(out, pending)
	}
	return out
}

// findReload answers GET /reloads/{id} as the real API does: a reload in
// progress, a failed one, the last successful one; an older successful
// one only by its id and status (the real API keeps no record of those).
func (s *Server) findReload(id string) *reload {
	var last *reload
	for _, rl := range s.reloads {
		if rl.Status == "succeeded" {
			last = rl
		}
	}
	for _, rl := range s.reloads {
		if rl.ID == id {
			if rl.Status == "succeeded" && rl != last {
				return &reload{ID: rl.ID, Status: rl.Status}
			}
			return rl
		}
	}
	return nil
}
