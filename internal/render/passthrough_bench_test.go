package render

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/plan"
)

// BenchmarkPassthroughHop: what the passthrough splitter in front of a
// terminating HTTP frontend costs a terminated request. Two real HAProxy
// processes serve one HTTPS host to one local Pod: "direct" as main
// renders an Ingress HTTPS frontend (no Passthrough: its binds are the
// address), "splitter" behind its _sni_ frontend (the abstract socket
// and the PROXY header). In turns (six, alternating, so the machine's
// load falls on both), 300 requests each, one at a time: a new TLS
// connection per request ("new", handshake included), then the same
// over one kept connection ("kept"). Prints the p50 and p99 of each.
//
//	go test ./internal/render -run '^$' -bench BenchmarkPassthroughHop -benchtime 1x
func BenchmarkPassthroughHop(b *testing.B) {
	for b.Loop() {
		pod := startPod(b)
		addrs := map[string]string{}
		for _, mode := range []string{"direct", "splitter"} {
			addrs[mode] = startTerminating(b, pod, mode == "splitter")
		}
		lat := map[string][]time.Duration{}
		for turn := range 6 {
			for _, mode := range []string{"direct", "splitter"} {
				if turn%2 == 1 {
					mode = map[string]string{"direct": "splitter", "splitter": "direct"}[mode]
				}
				lat[mode+" new"] = append(lat[mode+" new"], timeRequests(b, addrs[mode], false)...)
				lat[mode+" kept"] = append(lat[mode+" kept"], timeRequests(b, addrs[mode], true)...)
			}
		}
		for _, k := range []string{"direct new", "splitter new", "direct kept", "splitter kept"} {
			p50, p99 := percentiles(lat[k])
			b.Logf("%-13s p50 %7.1f µs  p99 %7.1f µs  (%d requests)", k, p50, p99, len(lat[k]))
		}
	}
}

// startPod serves 200 "ok" on loopback and returns its port.
func startPod(b *testing.B) uint16 {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})}
	go func() { _ = srv.Serve(l) }()
	b.Cleanup(func() { _ = srv.Close() })
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

// startTerminating runs HAProxy with a terminating HTTP frontend for
// a.example (behind its splitter when split) to the Pod, and returns
// its address.
func startTerminating(b *testing.B, pod uint16, split bool) string {
	dir := b.TempDir()
	cfg := terminating(b) // tls_test.go
	port := uint16(haproxytest.FreePort(b))
	be := &model.Backend{Name: "web", Balance: "roundrobin", HTTP: true, Servers: []model.Server{{Addr: netip.MustParseAddr("127.0.0.1"), Port: pod}}}
	f := cfg.Frontends[0]
	f.Binds = []model.Bind{{Addr: netip.MustParseAddr("127.0.0.1"), Port: port}}
	f.HTTP = model.Shaped(&model.HTTP{Port: port, Actions: []model.HTTPAction{{}, {Backends: []model.WeightedBackend{{Name: "web", Weight: 1}}}},
		Hosts: []model.HTTPHost{{Name: "a.example", Rules: []model.HTTPRule{{PathType: model.PathPrefix, Path: "/", Action: 1}}}}})
	if split {
		f.HTTP.Passthrough = &model.Passthrough{}
	}
	cfg = model.Config{Frontends: []model.Frontend{f}, Backends: []*model.Backend{be}}
	o := Options{StatsSocket: haproxytest.StatsSocketPath(dir), CertDir: dir, ACLDir: dir}
	writeTLSFiles(b, cfg, o, map[string][]byte{ClientAuthMapFile(dir): nil}) // clientauth_test.go
	writeHTTPMapFiles(b, dir, f)
	layout, _ := plan.Assign(cfg, nil, true)
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, Config(cfg, layout, o), 0o644); err != nil {
		b.Fatal(err)
	}
	haproxytest.Start(b, dir, path)
	return "127.0.0.1:" + strconv.Itoa(int(port))
}

// timeRequests times 300 GETs of a.example through addr, one at a time,
// on a new TLS connection each or on one kept connection.
func timeRequests(b *testing.B, addr string, keep bool) []time.Duration {
	tr := &http.Transport{DisableKeepAlives: !keep, MaxIdleConnsPerHost: 1,
		TLSClientConfig: &tls.Config{ServerName: "a.example", InsecureSkipVerify: true}} //nolint:gosec // the benchmark's own certificate
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	out := make([]time.Duration, 0, 300)
	for range 300 {
		req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/", nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Host = "a.example"
		start := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		out = append(out, time.Since(start))
	}
	return out
}

// percentiles are the p50 and p99 of ds in µs.
func percentiles(ds []time.Duration) (float64, float64) {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) float64 { return float64(s[int(q*float64(len(s)-1))].Nanoseconds()) / 1e3 }
	return at(0.50), at(0.99)
}
