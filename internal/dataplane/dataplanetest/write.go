package dataplanetest

import (
	"net/http"
	"strconv"
)

// write runs op inside the transaction named by the query, or outside any
// against the version it names.
func (s *Server) write(w http.ResponseWriter, r *http.Request, f op) {
	q := r.URL.Query()
	if id := q.Get("transaction_id"); id != "" {
		t := s.txs[id]
		if t == nil {
			s.fail(w, errf(http.StatusNotFound, "transaction %s does not exist", id))
			return
		}
		if t.status != "in_progress" {
			s.fail(w, errf(http.StatusBadRequest, "transaction %s is not in progress (%s)", id, t.status))
			return
		}
		echo, _, e := f(t.cfg)
		if e != nil {
			s.fail(w, e) // the transaction is not spoiled
			return
		}
		s.reply(w, http.StatusAccepted, echoOrNil(r, echo))
		return
	}
	vs := q.Get("version")
	if vs == "" {
		s.fail(w, errf(http.StatusBadRequest, "version or transaction not specified"))
		return
	}
	v, err := strconv.ParseInt(vs, 10, 64)
	if err != nil {
		s.fail(w, errf(http.StatusBadRequest, "version: %v", err))
		return
	}
	if v != s.version {
		s.fail(w, errf(http.StatusConflict, "version mismatch: version in configuration file is %d, given version is %d", s.version, v))
		return
	}
	next := s.cfg.clone()
	echo, live, e := f(next)
	if e != nil {
		s.fail(w, e)
		return
	}
	if live != nil && live.server != nil && !s.runtimeTakes(live) {
		live = nil // HAProxy refused a command: the API reloads instead
	}
	check := func() error { return s.check(next) }
	if live != nil && live.server != nil {
		// Only the server changed: only its address can be wrong.
		check = func() error { return checkServer(live.server) }
	}
	if err := check(); err != nil {
		s.fail(w, errf(http.StatusBadRequest, "validation error: %v", err))
		return
	}
	s.cfg = next
	s.version++
	switch {
	case live != nil:
		s.applyLive(live)
		s.reply(w, http.StatusOK, echo)
	case q.Get("force_reload") == "true":
		s.reloadNow()
		s.reply(w, forcedStatus(r.Method), echoOrNil(r, echo))
	default:
		w.Header().Set("Reload-Id", s.scheduleReload())
		s.reply(w, http.StatusAccepted, echoOrNil(r, echo))
	}
}

func echoOrNil(r *http.Request, o any) any {
	if r.Method == http.MethodDelete {
		return nil
	}
	return o
}

func forcedStatus(method string) int {
	switch method {
	case http.MethodPost:
		return http.StatusCreated
	case http.MethodDelete:
		return http.StatusNoContent
	}
	return http.StatusOK
}
