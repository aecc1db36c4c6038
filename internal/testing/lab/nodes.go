// Package lab is the shared test bench of the end-to-end tests, the demo
// and the benchmark: stand-ins for nodes (TCP servers on loopback addresses
// that answer with their name), builders for the Kubernetes objects, and a
// traffic prober. Nothing here leaves 127.0.0.0/8.
package lab

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// NodeServer stands in for one node's NodePorts: it listens on the node's
// loopback InternalIP and answers every connection with "NAME\n".
type NodeServer struct {
	Name string
	IP   string

	mu        sync.Mutex
	listeners map[int]net.Listener
	wg        sync.WaitGroup
}

// NewNodeServer returns a node stand-in for ip (which must be in 127.0.0.0/8).
func NewNodeServer(name, ip string) *NodeServer {
	return &NodeServer{Name: name, IP: ip, listeners: map[int]net.Listener{}}
}

// Listen opens port on the node (idempotent).
func (n *NodeServer) Listen(port int) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.listeners[port]; ok {
		return nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(n.IP, fmt.Sprint(port)))
	if err != nil {
		return err
	}
	n.listeners[port] = l
	n.wg.Add(1)
	go n.serve(l)
	return nil
}

func (n *NodeServer) serve(l net.Listener) {
	defer n.wg.Done()
	reply := []byte(n.Name + "\n")
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go func() {
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			_, _ = c.Write(reply)
			_ = c.Close()
		}()
	}
}

// Close stops every port of the node: the node is gone.
func (n *NodeServer) Close() {
	n.mu.Lock()
	for p, l := range n.listeners {
		_ = l.Close()
		delete(n.listeners, p)
	}
	n.mu.Unlock()
	n.wg.Wait()
}

// Probe opens one connection to addr and returns the name the server behind
// it answered with.
func Probe(addr string, timeout time.Duration) (string, error) { return ProbeFrom("", addr, timeout) }

// ProbeFrom is Probe from the local address src (a loopback address: the
// client's source as HAProxy sees it); "" lets the kernel choose.
func ProbeFrom(src, addr string, timeout time.Duration) (string, error) {
	d := net.Dialer{Timeout: timeout}
	if src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	buf := make([]byte, 64)
	var got []byte
	for {
		k, err := c.Read(buf)
		got = append(got, buf[:k]...)
		if len(got) > 0 && got[len(got)-1] == '\n' {
			return string(got[:len(got)-1]), nil
		}
		if err != nil {
			return "", fmt.Errorf("read from %s: %w (got %q)", addr, err, got)
		}
	}
}
