package lab

import (
	"net"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestSleepUnderAMillisecond: lab.Sleep's sub-millisecond waits are
// that, not the millisecond of time.Sleep's network poller.
func TestSleepUnderAMillisecond(t *testing.T) {
	const d = 250 * time.Microsecond
	took := make([]time.Duration, 101)
	for i := range took {
		start := time.Now()
		Sleep(d)
		took[i] = time.Since(start)
	}
	slices.Sort(took)
	if med := took[len(took)/2]; med < d || med > 800*time.Microsecond {
		t.Errorf("Sleep(%s): median %s, want %s..800µs", d, med, d)
	}
}

// TestUntilAnswered counts the probes refused before a listener answers
// and their period.
func TestUntilAnswered(t *testing.T) {
	n := NewNodeServer("node-a", "127.0.0.1")
	defer n.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // refused until the node listens
	from := time.Now()
	go func() {
		Sleep(20 * time.Millisecond)
		_ = n.Listen(port)
	}()
	a, err := UntilAnswered(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), from, 10*time.Second, 250*time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	if a.Probes < 2 || a.Period <= 0 || a.At.Sub(from) < 20*time.Millisecond {
		t.Errorf("answered %s after %d probes, period %s: want after 20ms, several probes, a period", a.At.Sub(from), a.Probes, a.Period)
	}
	if _, err := UntilAnswered("127.0.0.1:1", time.Now(), 5*time.Millisecond, time.Millisecond); err == nil {
		t.Error("a port nobody listens on answered")
	}
}
