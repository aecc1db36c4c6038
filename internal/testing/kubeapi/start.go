package kubeapi

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/proc"

	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdlatest "k8s.io/client-go/tools/clientcmd/api/latest"
	"sigs.k8s.io/yaml"
)

// disableAdmission is the apiserver's flag for the admission plugins it
// turns off.
const disableAdmission = "--disable-admission-plugins="

// startEtcd runs etcd on two free loopback ports and waits for /health.
func (s *Server) startEtcd(bin string) error {
	dataDir := filepath.Join(s.Dir, "etcd")
	return retryPorts("etcd", func(attempt int) (*proc.Process, error) {
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
		return p, waitUntil(p, etcdReadyTimeout, func() bool {
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

// startAPIServerOn is startAPIServer listening on bindIP (nil: loopback)
// and on port (0: a free one), reached there for readiness.
func (s *Server) startAPIServerOn(bin string, c *credentials, advertise, bindIP net.IP, port int, extra []string) error {
	bind, reconciler := "127.0.0.1", "none"
	if !advertise.IsLoopback() {
		reconciler = "lease" // the apiserver can publish its address
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

	return retryPorts("kube-apiserver", func(attempt int) (*proc.Process, error) {
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
			"--profiling=false",
		}
		// Without kube-controller-manager no default ServiceAccount
		// exists, and this plugin would reject every Pod; a caller
		// passing its own --disable-admission-plugins (empty: the
		// ServiceAccount plugin on, Pods get their token) decides.
		if !slices.ContainsFunc(extra, func(a string) bool { return strings.HasPrefix(a, disableAdmission) }) {
			args = append(args, disableAdmission+"ServiceAccount")
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
		return p, waitUntil(p, apiserverReadyTimeout, func() bool {
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
