package netlab

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// ServeName answers every TCP connection to port, on any address of the
// host's namespace, with the host's name, until the test ends (the
// failover tests' servers: who answered is who has the address).
func ServeName(t testing.TB, h *Host, port uint16) {
	t.Helper()
	Serve(t, h.NS, fmt.Sprintf(":%d", port), func(c net.Conn) { _, _ = io.WriteString(c, h.Name) })
}

// ServeEcho greets every TCP connection to port with the host's name (a
// line), then echoes each line back, until the test ends (a connection
// kept open: which host it ends on, and whether it lives on).
func ServeEcho(t testing.TB, h *Host, port uint16) {
	t.Helper()
	Serve(t, h.NS, fmt.Sprintf(":%d", port), func(c net.Conn) {
		if _, err := io.WriteString(c, h.Name+"\n"); err != nil {
			return
		}
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
	})
}

// Serve hands every TCP connection to addr (host:port as net.Listen
// takes it: ":80" is any address, port 0 one the kernel picks) in the
// network namespace ns to handle (each in a goroutine of its own; the
// connection closed after), until the test ends. It returns the address
// listened on.
func Serve(t testing.TB, ns, addr string, handle func(net.Conn)) netip.AddrPort {
	t.Helper()
	var ln net.Listener
	if err := Do(ns, func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

// AskName opens one TCP connection from the namespace ns to dst and
// returns what a ServeName server answered: the name of its host.
func AskName(ns string, dst netip.AddrPort, timeout time.Duration) (string, error) {
	var name string
	err := Do(ns, func() error {
		c, err := net.DialTimeout("tcp", dst.String(), timeout)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(timeout))
		b, err := io.ReadAll(c)
		name = string(b)
		return err
	})
	return name, err
}

// FirstAnswer is one failover trial's clock: it injects the fault, then
// asks (a new connection each time) every 10 ms, each try on its own,
// until an answer satisfies moved, and returns the time from the fault
// to that answer; an error when none did within window.
func FirstAnswer(window time.Duration, fault func() error, ask func() (string, error), moved func(name string) bool) (time.Duration, error) {
	type answer struct {
		at   time.Time
		name string
	}
	answers := make(chan answer, 2000)
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	var tries sync.WaitGroup
	defer tries.Wait()
	start := time.Now()
	if err := fault(); err != nil {
		return 0, err
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		tries.Add(1)
		go func() {
			defer tries.Done()
			if name, err := ask(); err == nil {
				select {
				case answers <- answer{time.Now(), name}:
				default:
				}
			}
		}()
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("no answer moved within %s of the fault", window)
		case a := <-answers:
			if moved(a.name) {
				return a.at.Sub(start), nil
			}
		case <-tick.C:
		}
	}
}

// Percentiles is p50, p95 and max of ds (not empty).
func Percentiles(ds []time.Duration) (p50, p95, worst time.Duration) {
	s := append([]time.Duration{}, ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s)-1)+0.5))] }
	return at(0.50), at(0.95), s[len(s)-1]
}

// Ms is d in whole milliseconds, for a table.
func Ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

// Row is one Markdown table row.
func Row(cells ...string) string { return "| " + strings.Join(cells, " | ") + " |" }
