package dataplanetest

import (
	"io"
	"net"
	"net/netip"
	"time"
)

// HAProxy's traffic, modelled for the frontends this server binds (loopback
// addresses only): a connection from a source outside the frontend's
// "tcp-request connection|content reject unless { src ... }" rule is closed
// at once, as HAProxy refuses it; any other is relayed to the first server
// of the frontend's default backend that runs ready, or closed when there
// is none. The source of a connection is its peer address (the PROXY
// protocol is not modelled: with accept_proxy, HAProxy would use the
// header's).

func (s *Server) accept(addr string, l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go s.relay(addr, c)
	}
}

func (s *Server) relay(addr string, c net.Conn) {
	defer c.Close()
	src := netip.Addr{}
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		src = ta.AddrPort().Addr().Unmap()
	}
	target, ok := s.route(addr, src)
	if !ok {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, as HAProxy's reject
		}
		return
	}
	up, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(up, c)
		if tc, ok := up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		close(done)
	}()
	_, _ = io.Copy(c, up)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite() // the server is done: so is the client's side
	}
	<-done
}

// route finds the running frontend bound at addr, applies its source rule
// to src, and names the server to relay to.
func (s *Server) route(addr string, src netip.Addr) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, fe := range s.running.frontends.names {
		bound := false
		for _, b := range s.running.binds[fe].all() {
			if hostPort(b) == addr {
				bound = true
			}
		}
		if !bound {
			continue
		}
		o := s.running.frontends.m[fe]
		if !s.srcAllowed(o, src) {
			return "", false
		}
		be, _ := o["default_backend"].(string)
		for _, name := range s.runtimeNames(be) {
			if rs := s.runtime[be][name]; rs.admin == "ready" {
				if a, err := netip.ParseAddr(rs.address); err == nil {
					return netip.AddrPortFrom(a, uint16(rs.port)).String(), true
				}
			}
		}
		return "", false
	}
	return "", false
}
