package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/apiserverlb"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
)

// Addresses inside the test's own network namespace: apiservers on
// .1-.5, the load balancer on .100, all on port 6443.
const (
	lbAddr   = "192.0.2.100"
	apiPort  = 6443
	leaseMax = 60 * time.Second // a killed apiserver's lease: 15 s TTL + a 10 s reconcile, with room
)

var memberAddrs = []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5"}

func apiAddr(a string) string { return fmt.Sprintf("%s:%d", a, apiPort) }

// apiLB is a control plane of real kube-apiservers sharing one etcd,
// HAProxy in front of them, and the controller in apiserver mode.
type apiLB struct {
	t         testing.TB
	dir       string
	cfgPath   string
	hap       *haproxytest.Process
	master    *haproxy.Master
	client    kubernetes.Interface
	ctlCancel context.CancelFunc
	ctlDone   chan error
	ctlLog    *haproxytest.LockedBuffer

	cluster   *kubeapi.Cluster
	apiState  string // --apiserver-state-file
	checkCert string
	checkKey  string
}

func newAPILB(t testing.TB) *apiLB {
	t.Helper()
	dir := t.TempDir()
	cluster, err := kubeapi.StartCluster(filepath.Join(dir, "cluster"), apiPort, append(slices.Clone(memberAddrs), lbAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(cluster.LogTail(30))
		}
		cluster.Stop()
	})
	a := &apiLB{t: t, dir: dir, cfgPath: filepath.Join(dir, "haproxy.cfg"), cluster: cluster,
		apiState: filepath.Join(dir, "apiservers.json")}
	// The health checks present a client certificate: anonymous
	// requests are refused by the apiservers of these tests.
	if a.checkCert, a.checkKey, err = cluster.ClientCert("haproxy-k8s-sync-check"); err != nil {
		t.Fatal(err)
	}
	a.startHAProxy()
	return a
}

// startHAProxy runs HAProxy on the config `init` writes (no frontend):
// as on a fresh host, HAProxy starts before anything else.
func (a *apiLB) startHAProxy() {
	a.t.Helper()
	if code := cli.Main([]string{"haproxy-k8s-sync", "init", "--force", "--haproxy-config", a.cfgPath,
		"--stats-socket", haproxytest.StatsSocketPath(a.dir), "--state-file", filepath.Join(a.dir, "state")},
		nil, os.Stdout, os.Stderr); code != 0 {
		a.t.Fatalf("init exited %d", code)
	}
	a.hap = haproxytest.Start(a.t, a.dir, a.cfgPath)
	a.master = haproxy.NewMaster(a.hap.MasterSocket)
}

func (a *apiLB) reloads() int {
	a.t.Helper()
	p, err := a.master.ShowProc(context.Background())
	if err != nil {
		a.t.Fatalf("show proc: %v", err)
	}
	return p.Reloads
}

func (a *apiLB) stopController() {
	if a.ctlCancel == nil {
		return
	}
	a.ctlCancel()
	select {
	case <-a.ctlDone:
	case <-time.After(10 * time.Second):
		a.t.Errorf("controller did not stop")
	}
	a.ctlCancel = nil
	if a.t.Failed() {
		a.t.Logf("controller log:\n%s", a.ctlLog.String())
	}
}

func (a *apiLB) member(addr string) {
	a.t.Helper()
	begin := time.Now()
	if _, err := a.cluster.StartMember(addr, "--anonymous-auth=false"); err != nil {
		a.t.Fatal(err)
	}
	a.t.Logf("apiserver %s ready in %v", addr, time.Since(begin).Round(time.Millisecond))
}

// apiControllerArgs: the controller reaches the API through the load
// balancer it drives, with the given credentials flags.
func (a *apiLB) apiControllerArgs(creds []string, extra ...string) []string {
	args := []string{
		"--mode", "apiserver",
		"--haproxy-config", a.cfgPath,
		"--haproxy-bin", haproxytest.Bin(),
		"--master-socket", a.hap.MasterSocket,
		"--stats-socket", a.hap.StatsSocket,
		"--state-file", filepath.Join(a.dir, "state"),
		"--apiserver-state-file", a.apiState,
		"--listen", apiAddr(lbAddr),
		"--apiserver-ca-file", a.cluster.CAPath,
		"--apiserver-check-cert", a.checkCert,
		"--apiserver-check-key", a.checkKey,
		"--min-reload-interval", "100ms",
		"--persist-interval", "100ms",
		"--resync-period", "5s",
		"--log-level", "debug",
		"--metrics-address", "", // restarted controllers: never two on one port (TestAPIServerModeMetrics scrapes)
	}
	return append(append(args, creds...), extra...)
}

func (a *apiLB) adminCreds() []string {
	return []string{"--api-server", "https://" + apiAddr(lbAddr), "--token-file", a.cluster.TokenPath, "--ca-file", a.cluster.CAPath}
}

func (a *apiLB) runController(args []string) {
	a.t.Helper()
	a.ctlLog = &haproxytest.LockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	a.ctlCancel, a.ctlDone = cancel, make(chan error, 1)
	go func() { a.ctlDone <- cli.Run(ctx, args, func(string) string { return "" }, a.ctlLog) }()
	a.t.Cleanup(a.stopController)
}

// backend returns the apiserver backend's servers in service (not in
// maintenance): address → up.
func (a *apiLB) backend() (map[string]bool, error) {
	// A connection of its own each time: a persistent one would stay
	// with the worker of before a reload.
	rt := haproxy.NewRuntime(a.hap.StatsSocket)
	defer rt.Close()
	st, err := rt.ShowServersState(context.Background())
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, s := range st {
		if s.Backend == apiserverlb.BackendName && !s.Maint() {
			out[fmt.Sprintf("%s:%d", s.Addr, s.Port)] = s.Up()
		}
	}
	return out, nil
}

// serving returns nil once the backend has exactly want in service, all
// up (or, with up false, whatever their health).
func (a *apiLB) serving(up bool, want ...string) func() error {
	return func() error {
		got, err := a.backend()
		if err != nil {
			return err
		}
		var names []string
		for k, isUp := range got {
			if up && !isUp {
				return fmt.Errorf("%s not up yet (%v)", k, got)
			}
			names = append(names, k)
		}
		sort.Strings(names)
		w := slices.Clone(want)
		sort.Strings(w)
		if !slices.Equal(names, w) {
			return fmt.Errorf("backend has %v, want %v", got, w)
		}
		return nil
	}
}

func (a *apiLB) within(d time.Duration, what string, cond func() error) time.Duration {
	a.t.Helper()
	begin := time.Now()
	var err error
	for time.Since(begin) < d {
		if err = cond(); err == nil {
			return time.Since(begin)
		}
		time.Sleep(20 * time.Millisecond) // poll interval, not synchronisation
	}
	a.t.Fatalf("%s: not within %v: %v\ncontroller log:\n%s", what, d, err, tail(a.ctlLog.String(), 40))
	return 0
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// clientLoop is a real client working through the load balancer until
// stopped: GET requests one after the other.
type clientLoop struct {
	ok, failed atomic.Int64
	slowest    atomic.Int64 // nanoseconds of the slowest request
	mu         sync.Mutex
	errs       []string
	errAt      []time.Time // when each request of errs began
	stop       context.CancelFunc
	done       chan struct{}
}

func startClientLoop(t testing.TB, cfg *rest.Config) *clientLoop {
	t.Helper()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &clientLoop{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for ctx.Err() == nil {
			rctx, rcancel := context.WithTimeout(ctx, 15*time.Second)
			begin := time.Now()
			_, err := c.CoreV1().Namespaces().Get(rctx, "default", metav1.GetOptions{})
			if d := int64(time.Since(begin)); d > l.slowest.Load() {
				l.slowest.Store(d)
			}
			rcancel()
			switch {
			case ctx.Err() != nil:
			case err != nil:
				l.failed.Add(1)
				l.mu.Lock()
				l.errs = append(l.errs, err.Error())
				l.errAt = append(l.errAt, begin)
				l.mu.Unlock()
			default:
				l.ok.Add(1)
			}
		}
	}()
	t.Cleanup(l.end)
	return l
}

func (l *clientLoop) end() { l.stop(); <-l.done }

func (l *clientLoop) check(t testing.TB, name string) { l.checkCut(t, name, time.Time{}, time.Time{}) }

// checkCut is check for a client whose one connection may have been to
// an apiserver killed at killed: the request in flight on it when the
// process died cannot be saved by any load balancer (client-go retries
// a GET only when no response began). At most one such request may
// fail, one that began before HAProxy marked the server down, with a
// broken-connection error; every other failure fails the test.
func (l *clientLoop) checkCut(t testing.TB, name string, killed, markedDown time.Time) {
	t.Helper()
	l.end()
	t.Logf("client %s: %d requests, %d failed", name, l.ok.Load()+l.failed.Load(), l.failed.Load())
	if l.ok.Load() == 0 {
		t.Errorf("client %s: no request succeeded", name)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var bad []string
	cut := 0
	for i, e := range l.errs {
		inFlight := !killed.IsZero() && l.errAt[i].Before(markedDown) && l.errAt[i].Add(15*time.Second).After(killed)
		if inFlight && cut == 0 && brokenConnection(e) {
			cut++
			t.Logf("client %s: the request in flight to the killed apiserver failed, as it must: %s", name, e)
			continue
		}
		bad = append(bad, e)
	}
	if len(bad) > 0 {
		t.Errorf("client %s: %d requests failed: %v", name, len(bad), bad[:min(len(bad), 5)])
	}
}

// brokenConnection tells an error of a connection cut under a request
// from any other (a timeout, a refusal, an HTTP error status).
func brokenConnection(e string) bool {
	for _, s := range []string{"unexpected EOF", "connection reset by peer", "broken pipe", "http2: client connection lost"} {
		if strings.Contains(e, s) {
			return true
		}
	}
	return false
}

// lbConfigs are two admin clients through the load balancer: client-go
// as it comes (one HTTP/2 connection, GETs retried on a broken
// connection), and one opening a new connection for every request, so
// that every server, the one about to die included, keeps getting new
// connections.
func (a *apiLB) lbConfigs() (pooled, fresh *rest.Config) {
	a.t.Helper()
	pooled = a.cluster.Config("https://" + apiAddr(lbAddr))
	caPEM, err := os.ReadFile(a.cluster.CAPath)
	if err != nil {
		a.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	fresh = &rest.Config{Host: pooled.Host, BearerToken: pooled.BearerToken, QPS: 1000, Burst: 2000,
		Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return pooled, fresh
}
