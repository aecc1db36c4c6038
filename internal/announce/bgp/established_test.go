package bgp

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/netlab"
)

// echoPort is where the hosts of TestRouterKeepsRoutesAcrossARestart
// echo every line back on a connection kept open.
const echoPort = 8081

// kept is a TCP connection from the router to an address, established
// once and asked again and again.
type kept struct {
	c    net.Conn
	r    *bufio.Reader
	n    int
	host string // the host that greeted it
}

func keepConn(l *lab, a netip.Addr) (*kept, error) { return keepConnFrom(l.router.NS, a) }

// keepConnFrom is keepConn from the namespace ns.
func keepConnFrom(ns string, a netip.Addr) (*kept, error) {
	c, err := netlab.DialTCP(ns, netip.Addr{}, netip.AddrPortFrom(a, echoPort))
	if err != nil {
		return nil, err
	}
	k := &kept{c: c, r: bufio.NewReader(c)}
	hello, err := k.r.ReadString('\n')
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("no greeting: %w", err)
	}
	k.host = strings.TrimSpace(hello)
	return k, k.alive()
}

// alive sends a line on the connection and reads it back within 2 s.
func (k *kept) alive() error {
	k.n++
	line := fmt.Sprintf("line %d\n", k.n)
	_ = k.c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := k.c.Write([]byte(line)); err != nil {
		return fmt.Errorf("the established connection: %w", err)
	}
	got, err := k.r.ReadString('\n')
	if err != nil || got != line {
		return fmt.Errorf("the established connection answered %q (%v), want %q", strings.TrimSpace(got), err, strings.TrimSpace(line))
	}
	return nil
}
