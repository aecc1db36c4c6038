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
// apiserver rejects 127.0.0.0/8 and ::1 in both). So by default, advertising
// 127.0.0.1, the default/kubernetes Service has no endpoints; with
// Options.AdvertiseAddress set to a non-loopback address of this machine
// (HostIP finds one) the apiserver maintains default/kubernetes itself.
// Several apiservers of one cluster (one etcd, shared credentials, each on
// its own address and the same port): StartCluster (controlplane.go).
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
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdlatest "k8s.io/client-go/tools/clientcmd/api/latest"
	"sigs.k8s.io/yaml"
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

	etcd              *process
	apiserver         *process
	controllerManager *process // with Options.Controllers
	kwok              *process // with Options.Controllers
}

// Options change how the apiserver runs. The zero value is the default.
type Options struct {
	// AdvertiseAddress is the address the apiserver publishes as the
	// endpoint of default/kubernetes. Empty means 127.0.0.1: the apiserver
	// listens on loopback only and, loopback being invalid in Endpoints,
	// default/kubernetes gets no endpoints (the endpoint reconciler is off).
	// A non-loopback address of this machine (see HostIP) makes the
	// apiserver listen on all interfaces and maintain default/kubernetes
	// with <AdvertiseAddress>:<port>, reachable from local HAProxy.
	AdvertiseAddress string
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
}

// Start runs etcd and kube-apiserver in t.TempDir() and waits until the
// apiserver is ready. Cleanup stops both; if the test failed, the last lines
// of their logs are written with t.Log first.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWithOptions(t, Options{})
}

// StartWithOptions is Start with Options.
func StartWithOptions(t testing.TB, opts Options) *Server {
	t.Helper()
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
	advertise := net.IPv4(127, 0, 0, 1)
	if opts.AdvertiseAddress != "" {
		if advertise = net.ParseIP(opts.AdvertiseAddress); advertise == nil {
			return nil, nil, fmt.Errorf("kubeapi: bad AdvertiseAddress %q", opts.AdvertiseAddress)
		}
	}
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
	creds, err := writeCredentials(filepath.Join(dir, "pki"), advertise)
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
			s.kwok.kill()
			s.controllerManager.kill()
			s.apiserver.kill()
			s.etcd.stop()
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
		err = s.startControllers(bins, opts.ControllerManagerArgs)
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
	for _, p := range []*process{s.etcd, s.apiserver, s.controllerManager, s.kwok} {
		if p != nil {
			fmt.Fprintf(&b, "--- last %d lines of %s ---\n%s", n, p.logPath, tailFile(p.logPath, n))
		}
	}
	return b.String()
}

// startEtcd runs etcd on two free loopback ports and waits for /health.
func (s *Server) startEtcd(bin string) error {
	dataDir := filepath.Join(s.Dir, "etcd")
	return retryPorts("etcd", func(attempt int) (*process, error) {
		ports, err := freePorts(2)
		if err != nil {
			return nil, err
		}
		client := "http://127.0.0.1:" + strconv.Itoa(ports[0])
		peer := "http://127.0.0.1:" + strconv.Itoa(ports[1])
		// A failed attempt may have left a half-initialised member behind.
		if err := os.RemoveAll(dataDir); err != nil {
			return nil, err
		}
		p, err := startProcess("etcd", bin, filepath.Join(s.Dir, logName("etcd", attempt)),
			"--name=kubeapi",
			"--data-dir="+dataDir,
			"--listen-client-urls="+client,
			"--advertise-client-urls="+client,
			"--listen-peer-urls="+peer,
			"--initial-advertise-peer-urls="+peer,
			"--initial-cluster=kubeapi="+peer,
			"--initial-cluster-state=new",
			// Test data is thrown away: no need to wait for the disk.
			"--unsafe-no-fsync",
			"--quota-backend-bytes="+strconv.Itoa(8<<30),
			"--log-level=warn",
		)
		if err != nil {
			return nil, err
		}
		s.etcd = p
		s.EtcdURL = client
		hc := &http.Client{Timeout: 2 * time.Second}
		return p, p.waitUntil(etcdReadyTimeout, func() bool {
			resp, err := hc.Get(client + "/health")
			if err != nil {
				return false
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK && bytes.Contains(body, []byte(`"true"`))
		})
	})
}

// startAPIServer runs kube-apiserver on a free loopback port and waits for
// /readyz and for the default namespace.
func (s *Server) startAPIServer(bin string, c *credentials, advertise net.IP, extra []string) error {
	return s.startAPIServerOn(bin, c, advertise, nil, 0, extra)
}

// startAPIServerOn is startAPIServer listening on bindIP (nil: loopback,
// or every address when advertising a non-loopback one) and on port (0: a
// free one), reached there for readiness.
func (s *Server) startAPIServerOn(bin string, c *credentials, advertise, bindIP net.IP, port int, extra []string) error {
	bind, reconciler := "127.0.0.1", "none"
	if !advertise.IsLoopback() {
		// Reachable at the published address, and the apiserver can
		// publish it.
		bind, reconciler = "0.0.0.0", "lease"
	}
	host := "127.0.0.1"
	if bindIP != nil {
		bind, host = bindIP.String(), bindIP.String()
	}
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(c.caFile)
	if err != nil {
		return err
	}
	pool.AppendCertsFromPEM(caPEM)
	hc := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	defer hc.CloseIdleConnections()

	return retryPorts("kube-apiserver", func(attempt int) (*process, error) {
		ports := []int{port}
		if port == 0 {
			var err error
			if ports, err = freePorts(1); err != nil {
				return nil, err
			}
		}
		url := "https://" + net.JoinHostPort(host, strconv.Itoa(ports[0]))
		args := []string{
			"--etcd-servers=" + s.EtcdURL,
			"--bind-address=" + bind,
			"--advertise-address=" + advertise.String(),
			// With a loopback advertise address the reconciler can only
			// fail (every 10 s, in the log): Endpoints reject loopback.
			"--endpoint-reconciler-type=" + reconciler,
			"--secure-port=" + strconv.Itoa(ports[0]),
			"--cert-dir=" + filepath.Join(s.Dir, "apiserver-certs"),
			"--tls-cert-file=" + c.certFile,
			"--tls-private-key-file=" + c.keyFile,
			"--token-auth-file=" + c.tokenFile,
			"--authorization-mode=Node,RBAC",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + c.saPubFile,
			"--service-account-signing-key-file=" + c.saKeyFile,
			"--service-cluster-ip-range=" + serviceCIDR,
			// Without kube-controller-manager no default ServiceAccount
			// exists, and this plugin would reject every Pod.
			"--disable-admission-plugins=ServiceAccount",
			"--profiling=false",
		}
		args = append(args, extra...)
		p, err := startProcess("kube-apiserver", bin, filepath.Join(s.Dir, logName("kube-apiserver", attempt)), args...)
		if err != nil {
			return nil, err
		}
		s.apiserver = p
		s.URL = url
		get := func(path string) int {
			req, err := http.NewRequest(http.MethodGet, url+path, nil)
			if err != nil {
				return 0
			}
			req.Header.Set("Authorization", "Bearer "+c.adminToken)
			resp, err := hc.Do(req)
			if err != nil {
				return 0
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		}
		// /readyz does not cover the bootstrap controller creating the
		// default namespace and the default/kubernetes Service; tests
		// use them right away.
		return p, p.waitUntil(apiserverReadyTimeout, func() bool {
			return get("/readyz") == http.StatusOK &&
				get("/api/v1/namespaces/default/services/kubernetes") == http.StatusOK
		})
	})
}

func writeKubeconfig(path, url string, caPEM []byte, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubeapi"] = &clientcmdapi.Cluster{Server: url, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["kubeapi"] = &clientcmdapi.Context{Cluster: "kubeapi", AuthInfo: "admin"}
	cfg.CurrentContext = "kubeapi"
	// What clientcmd.WriteToFile does, without the flag-parsing
	// dependencies of package clientcmd.
	js, err := kruntime.Encode(clientcmdlatest.Codec, cfg)
	if err != nil {
		return err
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		return err
	}
	return os.WriteFile(path, y, 0o600)
}

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// BinDir returns the directory holding kube-apiserver and etcd: $HKS_TESTBIN_DIR
// if set, else the one hack/testbin.sh prints (building the binaries on the
// first use on a machine, which takes minutes). The answer is cached for
// the life of the process.
func BinDir() (string, error) {
	binOnce.Do(func() {
		binDir, binErr = findBinDir()
		if binErr != nil {
			return
		}
		for _, b := range []string{"kube-apiserver", "etcd"} {
			if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
				binErr = fmt.Errorf("kubeapi: %s missing in %s: %w", b, binDir, err)
				return
			}
		}
	})
	return binDir, binErr
}

func findBinDir() (string, error) {
	if d := os.Getenv(EnvBinDir); d != "" {
		return d, nil
	}
	script, err := findScript()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Stderr = os.Stderr // build progress
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("kubeapi: %s: %w (set %s to skip it)", script, err, EnvBinDir)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	dir := strings.TrimSpace(lines[len(lines)-1])
	if dir == "" {
		return "", fmt.Errorf("kubeapi: %s printed no directory", script)
	}
	return dir, nil
}

const testbinModule = "github.com/haproxy-k8s-sync/haproxy-k8s-sync/hack/testbin"

// findScript locates hack/testbin.sh: next to this source file when the
// build kept source paths, else in the working directory or a parent.
func findScript() (string, error) {
	const rel = "hack/testbin.sh"
	var tried []string
	// Only our own repository's script: hack/testbin/go.mod must name it.
	ours := func(root string) bool {
		mod, err := os.ReadFile(filepath.Join(root, "hack", "testbin", "go.mod"))
		if err != nil || !bytes.Contains(mod, []byte(testbinModule)) {
			return false
		}
		_, err = os.Stat(filepath.Join(root, rel))
		return err == nil
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
		if ours(root) {
			return filepath.Join(root, rel), nil
		}
		tried = append(tried, root)
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if ours(d) {
				return filepath.Join(d, rel), nil
			}
			tried = append(tried, d)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", errors.New("kubeapi: cannot find " + rel + " (looked under " + strings.Join(tried, ", ") + "); set " + EnvBinDir)
}

// HostIP returns a non-loopback, non-link-local IPv4 address of this
// machine, for Options.AdvertiseAddress.
func HostIP() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip := n.IP.To4(); ip != nil && ip.IsGlobalUnicast() {
			return ip.String(), nil
		}
	}
	return "", errors.New("kubeapi: no non-loopback IPv4 address on this machine")
}
