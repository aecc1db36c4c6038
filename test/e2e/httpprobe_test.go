package e2e

import (
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// httpProbes detect a route's first 200 through HAProxy for the
// propagation benchmarks (issue 30). untilHTTP's single prober opened a
// connection per probe and slept 2 ms between probes: ~1.5 ms of mean
// detection delay in every measurement. Here probeClients probers, each
// on a connection kept alive (no connect per probe), poll the host in
// turn, started a fraction of the interval apart: the mean gap between
// two probes is about probeInterval/probeClients (Go's sleeps end no
// sooner than ~1 ms, so one prober cannot poll faster without spinning).
// The first prober to see the answer stops them all. HKS_BENCH_PROBE=old
// probes as untilHTTP does (one prober, a connection per probe, 2 ms),
// with the same report: the harnesses compared on one binary.
type httpProbes struct {
	port     int
	clients  []*http.Client
	interval time.Duration
	// What the probing cost, over every until: probes sent, the time
	// they took (the request alone), and the time spent probing (from
	// each until's start to its answer).
	probes  atomic.Int64
	busy    atomic.Int64 // ns
	probing time.Duration
}

const (
	probeClients  = 3
	probeInterval = time.Millisecond // each prober's sleep between two probes
)

// newHTTPProbes are probeClients probers of port on 127.0.0.1, each on
// a connection of its own, kept alive (HKS_BENCH_PROBE=old: untilHTTP's
// one prober).
func newHTTPProbes(port int) *httpProbes {
	if os.Getenv("HKS_BENCH_PROBE") == "old" {
		return &httpProbes{port: port, interval: 2 * time.Millisecond,
			clients: []*http.Client{{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}}
	}
	p := &httpProbes{port: port, interval: probeInterval}
	for range probeClients {
		p.clients = append(p.clients, &http.Client{Timeout: 2 * time.Second,
			Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}})
	}
	return p
}

// close drops the probers' kept connections.
func (p *httpProbes) close() {
	for _, c := range p.clients {
		c.CloseIdleConnections()
	}
}

// until polls host until a request is answered 200 by want and returns
// how long after start the first such answer came; on timeout, the last
// answer seen.
func (p *httpProbes) until(host, want string, start time.Time, deadline time.Duration) (time.Duration, error) {
	var served atomic.Int64 // ns after start; 0: not yet
	var last atomic.Pointer[string]
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, c := range p.clients {
		wg.Go(func() {
			// Staggered: prober i starts i/probeClients of an interval
			// after the first (a poll offset, not a synchronisation).
			time.Sleep(time.Duration(i) * p.interval / time.Duration(len(p.clients)))
			for served.Load() == 0 && time.Since(start) < deadline {
				t := time.Now()
				code, body, err := httpAnswer(c, p.port, host)
				p.busy.Add(int64(time.Since(t)))
				p.probes.Add(1)
				if err == nil && code == http.StatusOK && body == want {
					served.CompareAndSwap(0, int64(time.Since(start)))
					return
				}
				s := fmt.Sprintf("%d %q %v", code, body, err)
				last.Store(&s)
				time.Sleep(p.interval) // poll interval
			}
		})
	}
	wg.Wait()
	p.probing += time.Since(t0)
	if d := served.Load(); d != 0 {
		return time.Duration(d), nil
	}
	l := ""
	if s := last.Load(); s != nil {
		l = *s
	}
	return 0, fmt.Errorf("%s not answered 200 by %s within %s; last: %s", host, want, deadline, l)
}

// report gives what the probing cost: the mean gap between two probes
// (the time spent probing over the probes sent; the mean detection
// delay is about half of it plus a request) and the mean time of one
// probe's request.
func (p *httpProbes) report(b *testing.B) {
	n := p.probes.Load()
	if n == 0 {
		return
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	b.ReportMetric(us(p.probing/time.Duration(n)), "probe-gap-us")
	b.ReportMetric(us(time.Duration(p.busy.Load()/n)), "probe-req-us")
	b.Logf("probes: %d probers, %d probes in %s of probing: one every %s, each request %s",
		len(p.clients), n, p.probing.Round(time.Millisecond), (p.probing / time.Duration(n)).Round(time.Microsecond),
		time.Duration(p.busy.Load()/n).Round(time.Microsecond))
}
