package netlab

import (
	"bufio"
	"net"
	"net/netip"
	"strings"
	"time"
)

// DialTCP connects from namespace ns to dst, from src when it is valid
// (an address of the namespace), giving up after 2 s; the connection's
// deadline is 3 s away.
func DialTCP(ns string, src netip.Addr, dst netip.AddrPort) (net.Conn, error) {
	var c net.Conn
	err := Do(ns, func() (err error) {
		d := net.Dialer{Timeout: 2 * time.Second}
		if src.IsValid() {
			d.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
		}
		c, err = d.Dial("tcp", dst.String())
		return err
	})
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	return c, nil
}

// FirstLine reads the first line c answers (without its end), after
// sending hello when it is not empty, and closes c.
func FirstLine(c net.Conn, hello string) (string, error) {
	defer c.Close()
	if hello != "" {
		if _, err := c.Write([]byte(hello)); err != nil {
			return "", err
		}
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// AskTCP connects from ns (from src when valid) to dst and returns the
// first line answered: "" with an error when refused, closed or silent.
func AskTCP(ns string, src netip.Addr, dst netip.AddrPort) (string, error) {
	c, err := DialTCP(ns, src, dst)
	if err != nil {
		return "", err
	}
	return FirstLine(c, "")
}
