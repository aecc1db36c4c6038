package dataplanetest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
)

// Kill is the API process killed: it stops answering (connections
// refused) while HAProxy, its configuration and its runtime state go on.
// Revive starts it again.
func (s *Server) Kill() { s.http.Close() }

// Revive is the API started again on the same address, as the real one
// comes back: with the configuration it holds (the real API reads
// haproxy.cfg), without its transactions, and with reload ids counted
// again from the start.
func (s *Server) Revive() error {
	l, err := net.Listen("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.txs, s.reloads, s.pending, s.seq = map[string]*tx{}, nil, nil, 0
	s.mu.Unlock()
	ts := httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	ts.Listener.Close()
	ts.Listener = l
	ts.Start()
	s.http = ts
	return nil
}
