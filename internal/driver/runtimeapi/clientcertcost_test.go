package runtimeapi

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/certs"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// BenchmarkClientCertConnections is the cost of `no-ssl-reuse` on the
// servers presenting a client certificate (clientcerts.go): each new
// connection to such a server is a full TLS handshake instead of a
// resumed one. One HAProxy, two frontends, each before a backend to one
// Go server requiring a client certificate and closing every connection
// (so every request is a new server connection: the worst case), the
// server lines as this branch renders them and as main did (the same
// without `no-ssl-reuse`). Requests one after another; it reports the
// wall time per request, HAProxy's CPU time per request (master and
// worker, /proc) and the share of server handshakes resumed.
//
//	HAPROXY_BIN=... go test -run '^$' -bench ClientCertConnections -benchtime 2000x -count 3 ./internal/driver/runtimeapi/
func BenchmarkClientCertConnections(b *testing.B) {
	dir := b.TempDir()
	serverCA, clientCA := testcert.CA(b, "server CA"), testcert.CA(b, "client CA")
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.Cert)
	var handshakes, resumed atomic.Int64
	srv := serveTLSHandler(b, serverCA, &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		handshakes.Add(1)
		if r.TLS.DidResume {
			resumed.Add(1)
		}
	}, "a.example.com")
	client := testcert.Issue(b, testcert.Spec{CN: "gateway", Client: true}, clientCA)
	bundle, err := certs.Parse(client.PEM(), client.KeyPEM(b), client.Cert.NotBefore)
	if err != nil {
		b.Fatal(err)
	}
	be := &model.Backend{Name: "be", TLS: &model.BackendTLS{SNI: "a.example.com", CA: "ca", CAPEM: serverCA.PEM(), Cert: "ccert", CertPEM: bundle.PEM}}
	ropts := render.Options{CertDir: dir}
	for p, body := range map[string][]byte{render.CAFile(dir, "ca"): serverCA.PEM(), render.CertFile(dir, "ccert"): bundle.PEM} {
		if err := os.WriteFile(p, body, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	branch := render.RenewOptions(be, ropts)
	if !slices.Contains(branch, "no-ssl-reuse") {
		b.Fatalf("the server line of a backend presenting a client certificate has no no-ssl-reuse: %q", branch)
	}
	lines := map[string][]string{
		"no-ssl-reuse": branch,                                                                                      // this branch
		"ssl-reuse":    slices.DeleteFunc(slices.Clone(branch), func(s string) bool { return s == "no-ssl-reuse" }), // main
	}
	cfg := haproxytest.MinimalConfig(dir)
	ports := map[string]int{}
	for _, name := range slices.Sorted(maps.Keys(lines)) {
		ports[name] = haproxytest.FreePort(b)
		cfg += fmt.Sprintf("frontend fe_%[1]s\n    mode http\n    bind 127.0.0.1:%[2]d\n    default_backend be_%[1]s\n"+
			"backend be_%[1]s\n    mode http\n    server s1 %[3]s %[4]s\n", name, ports[name], srv, strings.Join(lines[name], " "))
	}
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	p := haproxytest.Start(b, dir, cfgPath)
	c := &http.Client{Timeout: 5 * time.Second}
	for _, name := range []string{"ssl-reuse", "no-ssl-reuse"} {
		b.Run(name, func(b *testing.B) {
			url := "http://127.0.0.1:" + strconv.Itoa(ports[name]) + "/"
			get := func() {
				resp, err := c.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("%s: %s", name, resp.Status)
				}
			}
			for range 20 { // sessions in the store, when they are kept
				get()
			}
			handshakes.Store(0)
			resumed.Store(0)
			cpu0 := groupCPU(b, p.MasterPID())
			b.ResetTimer()
			for range b.N {
				get()
			}
			b.StopTimer()
			b.ReportMetric(float64((groupCPU(b, p.MasterPID())-cpu0).Microseconds())/float64(b.N), "haproxy-cpu-us/op")
			b.ReportMetric(float64(resumed.Load())/float64(max(handshakes.Load(), 1)), "resumed/op")
		})
	}
}

// groupCPU is the CPU time (user and system) pid and its children have
// used so far, from /proc (clock ticks of 10 ms).
func groupCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	pids := []string{strconv.Itoa(pid)}
	if kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); err == nil {
		pids = append(pids, strings.Fields(string(kids))...)
	}
	var ticks int64
	for _, id := range pids {
		stat, err := os.ReadFile("/proc/" + id + "/stat")
		if err != nil {
			tb.Fatal(err)
		}
		// The fields after the command's closing parenthesis: utime and
		// stime are the 12th and 13th.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		for _, s := range f[11:13] {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			ticks += n
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}
