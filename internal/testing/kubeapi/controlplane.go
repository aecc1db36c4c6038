package kubeapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Cluster is a control plane of several kube-apiservers sharing one etcd
// and one set of credentials (CA, service-account keys, admin token), each
// listening on its own address and all on the same port, as in a real
// cluster: the default/kubernetes EndpointSlice then lists every running
// one (each renews a lease; a killed one leaves the slice once its lease
// expires, about 15 s, and another apiserver reconciles, every 10 s).
//
// Loopback addresses are refused in that slice, so members need
// non-loopback addresses: run the test in a network namespace of its own
// with addresses on a dummy interface there (see test/e2e), never on the
// host's interfaces.
type Cluster struct {
	Dir       string
	Port      int    // the secure port of every member
	EtcdURL   string // shared etcd
	CAPath    string // CA of the serving certificate (and of client certificates)
	Token     string // admin bearer token (group system:masters)
	TokenPath string

	creds *credentials
	etcd  *Server // holds the etcd process
	bins  string

	mu      sync.Mutex
	members map[string]*Server // by address
}

// StartCluster starts etcd and writes the credentials under dir; members
// start with StartMember. certIPs are the addresses the serving
// certificate names besides loopback: every member's, and any load
// balancer's in front of them. Members accept client certificates signed
// by the CA (ClientCert).
func StartCluster(dir string, port int, certIPs []string) (*Cluster, error) {
	bins, err := BinDir()
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	var ips []net.IP
	for _, s := range certIPs {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, fmt.Errorf("kubeapi: bad certificate IP %q", s)
		}
		ips = append(ips, ip)
	}
	if len(ips) == 0 {
		return nil, errors.New("kubeapi: a cluster needs its members' addresses")
	}
	creds, err := writeCredentials(filepath.Join(dir, "pki"), ips[0], ips[1:]...)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	c := &Cluster{Dir: dir, Port: port, CAPath: creds.caFile, Token: creds.adminToken, TokenPath: creds.adminTokenRaw,
		creds: creds, bins: bins, members: map[string]*Server{}, etcd: &Server{Dir: filepath.Join(dir, "etcd")}}
	if err := os.MkdirAll(c.etcd.Dir, 0o700); err != nil {
		return nil, err
	}
	if err := c.etcd.startEtcd(filepath.Join(bins, "etcd")); err != nil {
		c.etcd.etcd.Stop(stopGrace)
		return nil, err
	}
	c.EtcdURL = c.etcd.EtcdURL
	return c, nil
}

// StartMember runs a kube-apiserver on addr:Port advertising addr, and
// waits until it is ready. extra flags are appended last.
func (c *Cluster) StartMember(addr string, extra ...string) (*Server, error) {
	ip := net.ParseIP(addr)
	if ip == nil {
		return nil, fmt.Errorf("kubeapi: bad member address %q", addr)
	}
	s := &Server{Dir: filepath.Join(c.Dir, "member-"+addr), EtcdURL: c.EtcdURL, Token: c.Token, TokenPath: c.TokenPath, CAPath: c.CAPath}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, err
	}
	args := append([]string{"--client-ca-file=" + c.CAPath}, extra...)
	if err := s.startAPIServerOn(filepath.Join(c.bins, "kube-apiserver"), c.creds, ip, ip, c.Port, args); err != nil {
		s.apiserver.Kill()
		return nil, err
	}
	s.Config = c.Config(s.URL)
	c.mu.Lock()
	if old := c.members[addr]; old != nil {
		old.apiserver.Kill()
	}
	c.members[addr] = s
	c.mu.Unlock()
	return s, nil
}

// Kill ends the member at addr at once (SIGKILL): no graceful shutdown,
// its lease is left to expire.
func (c *Cluster) Kill(addr string) {
	c.mu.Lock()
	s := c.members[addr]
	delete(c.members, addr)
	c.mu.Unlock()
	if s != nil {
		s.apiserver.Kill()
	}
}

// Stop ends every member and etcd.
func (c *Cluster) Stop() {
	c.mu.Lock()
	members := c.members
	c.members = map[string]*Server{}
	c.mu.Unlock()
	for _, s := range members {
		s.apiserver.Kill()
	}
	c.etcd.etcd.Stop(stopGrace)
}

// LogTail returns the last n lines of etcd's and every member's logs.
func (c *Cluster) LogTail(n int) string {
	out := c.etcd.LogTail(n)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.members {
		out += s.LogTail(n)
	}
	return out
}

// Config is the admin's client configuration for url (a member's, or a
// load balancer's whose address the certificate names).
func (c *Cluster) Config(url string) *rest.Config {
	caPEM, _ := os.ReadFile(c.CAPath)
	return &rest.Config{Host: url, BearerToken: c.Token, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}, QPS: 1000, Burst: 2000}
}

// URL is https://addr:Port.
func (c *Cluster) URL(addr string) string {
	return "https://" + net.JoinHostPort(addr, strconv.Itoa(c.Port))
}

// ClientCert issues a client certificate for user cn (groups as its
// organisations), signed by the cluster's CA, and returns the paths of the
// certificate and key PEM files.
func (c *Cluster) ClientCert(cn string, groups ...string) (certFile, keyFile string, err error) {
	caPEM, err := os.ReadFile(c.creds.caFile)
	if err != nil {
		return "", "", err
	}
	caKeyPEM, err := os.ReadFile(c.creds.caKeyFile)
	if err != nil {
		return "", "", err
	}
	cb, _ := pem.Decode(caPEM)
	kb, _ := pem.Decode(caKeyPEM)
	if cb == nil || kb == nil {
		return "", "", errors.New("kubeapi: unreadable CA")
	}
	caCert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return "", "", err
	}
	caKey, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return "", "", err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return "", "", err
	}
	now := time.Now()
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: groups},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, caCert, &key.PublicKey, caKey)
	if err != nil {
		return "", "", err
	}
	dir := filepath.Join(c.Dir, "clients")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, cn+".crt"), filepath.Join(dir, cn+".key")
	if err := os.WriteFile(certFile, pemBlock("CERTIFICATE", der), 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, os.WriteFile(keyFile, ecKeyPEM(key), 0o600)
}
