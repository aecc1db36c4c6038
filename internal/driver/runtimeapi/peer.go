package runtimeapi

import (
	"net"
	"net/netip"
	"os"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// localPeer is the address of HAProxy's local peer (render.Options.Peer),
// which keeps stick tables (ClientIP affinity) across reloads: the old
// worker hands them to the new one there. It must not change between
// two reloads, so the one in the config on disk is kept; without one, a
// loopback port free now. HAProxy 2.6's local peer does not work on a
// UNIX socket (measured: the new worker never finishes learning from
// it). Invalid (no peers section, tables start empty after a reload) when
// no port can be had.
func localPeer(configPath string) netip.AddrPort {
	if f, err := os.Open(configPath); err == nil {
		p := render.ScanPeer(f)
		f.Close()
		if p.IsValid() {
			return p
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return netip.AddrPort{}
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).AddrPort()
}
