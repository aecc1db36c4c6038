package model

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// ParseBind parses a listen address given on the command line: ":PORT"
// (every address), "IP:PORT" or "[IPv6]:PORT", the port not 0. Anything
// else (a host name, trailing words) is an error.
func ParseBind(s string) (Bind, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return Bind{}, fmt.Errorf("want :PORT, IP:PORT or [IPv6]:PORT: %w", err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return Bind{}, fmt.Errorf("invalid port %q", port)
	}
	b := Bind{Port: uint16(p)}
	if host != "" {
		if b.Addr, err = netip.ParseAddr(host); err != nil || b.Addr.Zone() != "" {
			return Bind{}, fmt.Errorf("want an IP address without a zone, got %q", host)
		}
	}
	return b, nil
}
