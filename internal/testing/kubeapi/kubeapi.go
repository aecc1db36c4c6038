// Package kubeapi runs a real kube-apiserver backed by a real etcd, both
// built from the Go module proxy by hack/testbin.sh, for tests and for
// local demo or benchmark programs.
//
// The pair listens on loopback (by default) on free ports, with fresh credentials:
// a self-signed serving CA and certificate, a static admin bearer token in
// group system:masters, and service-account keys, all generated in Go.
// Authorization is Node,RBAC, so tests can also check that a least-privilege
// identity is enough (see ConfigForToken).
//
// Loopback addresses are invalid in Endpoints and EndpointSlices (the
// apiserver rejects 127.0.0.0/8 and ::1 in both). So a Server, advertising
// 127.0.0.1, leaves the default/kubernetes Service without endpoints.
// Several apiservers of one cluster (one etcd, shared credentials, each on
// its own non-loopback address and the same port, which default/kubernetes
// lists): StartCluster (controlplane.go).
//
// By default nothing runs controllers: EndpointSlices of other Services,
// ServiceAccount token Secrets, garbage collection and namespace deletion
// need kube-controller-manager. Tests create the objects they need. The
// ServiceAccount admission plugin is disabled so Pods can be created without
// a default ServiceAccount. With Options.Controllers, kube-controller-manager
// (the controllers in Controllers) and kwok (fake Nodes and Pods, moved by
// the stages in kwok-stages.yaml) run too, so Deployments make Pods and the
// real endpoint-slice controller writes their EndpointSlices (cluster.go).
package kubeapi

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/proc"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// EnvBinDir names the environment variable that points at a directory
// holding kube-apiserver and etcd. Without it, hack/testbin.sh finds or
// builds them.
const EnvBinDir = "HKS_TESTBIN_DIR"

// Timeouts for start-up. They are generous because `go test ./...` may
// start several servers at once on a small CI machine.
const (
	etcdReadyTimeout      = 60 * time.Second
	apiserverReadyTimeout = 180 * time.Second
	stopGrace             = 10 * time.Second
	pollInterval          = 50 * time.Millisecond
	startAttempts         = 3 // retries when a free port was taken meanwhile
)

// Server is a running kube-apiserver with its etcd.
type Server struct {
	// Config authenticates as the admin (group system:masters). It has a
	// high QPS/Burst so tests and benchmarks are not throttled client-side.
	// Copy it (rest.CopyConfig) before changing it.
	Config *rest.Config
	// KubeconfigPath is a kubeconfig file for the admin (token and CA data
	// embedded), usable with --kubeconfig.
	KubeconfigPath string
	// URL is https://127.0.0.1:<port>.
	URL string
	// Token is the admin bearer token; TokenPath is a file holding only it.
	Token     string
	TokenPath string
	// CAPath is the PEM CA that signed the serving certificate.
	CAPath string
	// Dir holds everything: credentials, etcd data, logs.
	Dir string
	// EtcdURL is the etcd client URL (http://127.0.0.1:<port>).
	EtcdURL string

	etcd              *proc.Process
	apiserver         *proc.Process
	controllerManager *proc.Process // with Options.Controllers
	kwok              *proc.Process // with Options.Controllers

	// To start the apiserver again (StartAPIServer).
	creds   *credentials
	bins    string
	apiArgs []string

	baseline map[string][]byte             // etcd's keys and values at Baseline (reset.go)
	listable []schema.GroupVersionResource // the resources served at Baseline
	tainted  bool                          // a part was stopped or started again: not to be shared on (shared.go)
}

// Options change how the apiserver runs. The zero value is the default.
type Options struct {
	// APIServerArgs are extra kube-apiserver flags, appended last (a
	// repeated flag overrides the earlier one).
	APIServerArgs []string
	// Controllers also runs kube-controller-manager and kwok (see
	// cluster.go); Start returns once the controller-manager works.
	Controllers bool
	// ControllerManagerArgs are extra kube-controller-manager flags, e.g.
	// --max-endpoints-per-slice=N to see several slices per Service with
	// few Pods.
	ControllerManagerArgs []string
	// NoKwok runs kube-controller-manager without kwok: the Nodes are real
	// kubelets (internal/testing/nodes), which kwok must not manage.
	NoKwok bool
	// CertIPs are more addresses the serving certificate names, e.g. the
	// ClusterIP of default/kubernetes in another service range, which an
	// in-cluster client (a Pod) dials.
	CertIPs []net.IP
}

// Start runs etcd and kube-apiserver in t.TempDir() and waits until the
// apiserver is ready. Cleanup stops both; if the test failed, the last lines
// of their logs are written with t.Log first. In a test binary that runs
// through Shared, the tests of the process share one (shared.go).
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWithOptions(t, Options{})
}

// StartWithOptions is Start with Options.
func StartWithOptions(t testing.TB, opts Options) *Server {
	t.Helper()
	if s := lease(t, opts); s != nil {
		return s
	}
	begin := time.Now()
	s, stop, err := StartProcessWithOptions(t.TempDir(), opts)
	if err != nil {
		t.Fatalf("kubeapi: %v", err)
	}
	t.Logf("kubeapi: apiserver %s ready in %v (dir %s)", s.URL, time.Since(begin).Round(time.Millisecond), s.Dir)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(s.LogTail(60))
		}
		stop()
	})
	return s
}

// StartProcess is Start for programs that are not tests: it runs etcd and
// kube-apiserver with all their files under dir (created if missing) and
// returns once the apiserver is ready. stop ends both processes; it may be
// called more than once. On error nothing is left running.
func StartProcess(dir string) (s *Server, stop func(), err error) {
	return StartProcessWithOptions(dir, Options{})
}

// StartProcessWithOptions is StartProcess with Options.
func StartProcessWithOptions(dir string, opts Options) (s *Server, stop func(), err error) {
	// Loopback only; default/kubernetes gets no endpoints (the endpoint
	// reconciler is off).
	advertise := net.IPv4(127, 0, 0, 1)
	bins, err := BinDir()
	if err != nil {
		return nil, nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	creds, err := writeCredentials(filepath.Join(dir, "pki"), advertise, opts.CertIPs...)
	if err != nil {
		return nil, nil, fmt.Errorf("credentials: %w", err)
	}
	s = &Server{Dir: dir, Token: creds.adminToken, TokenPath: creds.adminTokenRaw, CAPath: creds.caFile}

	var once sync.Once
	stop = func() {
		once.Do(func() {
			// The apiserver first, so it does not log etcd errors while
			// shutting down. Its graceful shutdown takes over a second
			// and nothing it holds outlives the test: kill it.
			s.kwok.Kill()
			s.controllerManager.Kill()
			s.apiserver.Kill()
			s.etcd.Stop(stopGrace)
		})
	}
	defer func() {
		if err != nil {
			stop()
			s = nil
			stop = nil
		}
	}()

	if err = s.startEtcd(filepath.Join(bins, "etcd")); err != nil {
		return
	}
	if err = s.startAPIServer(filepath.Join(bins, "kube-apiserver"), creds, advertise, opts.APIServerArgs); err != nil {
		return
	}
	s.creds, s.bins, s.apiArgs = creds, bins, opts.APIServerArgs

	caPEM, err := os.ReadFile(creds.caFile)
	if err != nil {
		return
	}
	s.Config = &rest.Config{
		Host:            s.URL,
		BearerToken:     creds.adminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
		QPS:             1000,
		Burst:           2000,
	}
	s.KubeconfigPath = filepath.Join(dir, "kubeconfig")
	if err = writeKubeconfig(s.KubeconfigPath, s.URL, caPEM, creds.adminToken); err != nil {
		return
	}
	if opts.Controllers {
		err = s.startControllers(bins, opts.ControllerManagerArgs, !opts.NoKwok)
	}
	return s, stop, err
}

// Client returns a clientset authenticated as the admin.
func (s *Server) Client(t testing.TB) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(rest.CopyConfig(s.Config))
	if err != nil {
		t.Fatalf("kubeapi: clientset: %v", err)
	}
	return c
}

// ConfigForToken returns a config for this server that authenticates with
// the given bearer token instead of the admin's, e.g. a ServiceAccount
// token from the TokenRequest API, to test RBAC rules.
func (s *Server) ConfigForToken(token string) *rest.Config {
	c := rest.AnonymousClientConfig(s.Config)
	c.BearerToken = token
	return c
}

// LogTail returns the last n lines of the etcd and kube-apiserver logs (and
// of kube-controller-manager and kwok when they run).
func (s *Server) LogTail(n int) string {
	var b strings.Builder
	for _, p := range []*proc.Process{s.etcd, s.apiserver, s.controllerManager, s.kwok} {
		if p != nil {
			fmt.Fprintf(&b, "--- last %d lines of %s ---\n%s", n, p.LogPath, p.Tail(n))
		}
	}
	return b.String()
}

// PIDs are the process ids of the running kube-apiserver and etcd (a
// benchmark reads their CPU time from /proc).
func (s *Server) PIDs() (apiserver, etcd int) { return s.apiserver.Pid(), s.etcd.Pid() }

// StopAPIServer kills the kube-apiserver (SIGKILL, as a crash would);
// etcd and everything else go on. StartAPIServer starts it again.
func (s *Server) StopAPIServer() { s.tainted = true; s.apiserver.Kill() }

// StartAPIServer starts the kube-apiserver again on the same address and
// port with the same credentials and flags, and waits until it is ready.
func (s *Server) StartAPIServer() error {
	s.tainted = true
	u, err := url.Parse(s.URL)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return err
	}
	ip := net.IPv4(127, 0, 0, 1)
	return s.startAPIServerOn(filepath.Join(s.bins, "kube-apiserver"), s.creds, ip, nil, port, s.apiArgs)
}

// StopEtcd kills etcd (SIGKILL); the apiserver goes on without it.
// StartEtcd starts it again.
func (s *Server) StopEtcd() { s.tainted = true; s.etcd.Kill() }

// StartEtcd starts etcd again with its data and on the same ports, and
// waits until it is healthy.
func (s *Server) StartEtcd() error {
	s.tainted = true
	old := s.etcd
	p, err := startProcess("etcd", old.Cmd.Path, filepath.Join(s.Dir, "etcd-restarted.log"), old.Cmd.Args[1:]...)
	if err != nil {
		return err
	}
	s.etcd = p
	hc := &http.Client{Timeout: 2 * time.Second}
	return waitUntil(p, etcdReadyTimeout, func() bool {
		resp, err := hc.Get(s.EtcdURL + "/health")
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte(`"true"`))
	})
}
