package runtimeapi

import (
	"context"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// load sends GETs for host/path through addr from 8 keep-alive clients
// for d, and returns the requests per second answered 200 and the
// failures.
func load(b *testing.B, addr, host, path string, d time.Duration) (float64, int64) {
	b.Helper()
	var ok, failed atomic.Int64
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer c.CloseIdleConnections()
			for time.Now().Before(stop) {
				req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
				if err != nil {
					failed.Add(1)
					return
				}
				req.Host = host
				resp, err := c.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ok.Add(1)
				} else {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(ok.Load()) / d.Seconds(), failed.Load()
}

// BenchmarkHTTPThroughput: requests per second through a real HAProxy's
// HTTP frontend whose table holds 1 route, then HKS_BENCH_ROUTES
// (10,000) routes (routeTable: each a host with an Exact path, a header
// match and a split), in turns of 3 s (three each, alternating, so the
// machine's load falls on both), the same request each time (the first
// route's host and path) from 8 keep-alive clients on loopback. Prints
// both rates, their ratio and the worker's RSS with each table.
//
//	go test ./internal/driver/runtimeapi -run '^$' -bench BenchmarkHTTPThroughput -benchtime 1x
func BenchmarkHTTPThroughput(b *testing.B) {
	n := benchCount("HKS_BENCH_ROUTES", 10000)
	for b.Loop() {
		l := startMapLab(b)
		d := l.d
		ctx := context.Background()
		be := serveHTTP(b, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
		port := uint16(haproxytest.FreePort(b))
		addr := "127.0.0.1:" + strconv.Itoa(int(port))
		tables := map[int]int{1: 1, n: n}
		rate := map[int]float64{}
		rss := map[int]float64{}
		var failed int64
		for turn := range 6 {
			size := tables[1]
			if turn%2 == 1 {
				size = tables[n]
			}
			if _, err := d.Apply(ctx, httpConfig(port, routeTable(size, "/app", 100), be, be)); err != nil {
				b.Fatal(err)
			}
			r, f := load(b, addr, "r0.example.com", "/app", 3*time.Second)
			rate[size] += r / 3
			failed += f
			rss[size] = workerRSS(b, d) // certs_bench_test.go
		}
		b.ReportMetric(rate[1], "req/s-1-route")
		b.ReportMetric(rate[n], "req/s-"+strconv.Itoa(n)+"-routes")
		b.ReportMetric(rate[n]/rate[1]*100, "%-of-1-route")
		b.ReportMetric(float64(failed), "failed")
		b.Logf("1 route: %.0f req/s, worker RSS %.1f MiB; %d routes: %.0f req/s (%.1f%%), worker RSS %.1f MiB; %d requests failed",
			rate[1], rss[1], n, rate[n], rate[n]/rate[1]*100, rss[n], failed)
	}
}

// benchCount is the positive number in the environment variable name,
// or def.
func benchCount(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
