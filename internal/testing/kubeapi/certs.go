package kubeapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// credentials are the files the apiserver and its clients need. Everything
// is generated fresh for every server; ECDSA P-256 keys keep that cheap.
type credentials struct {
	caFile        string // serving CA certificate (PEM); what clients trust
	caKeyFile     string // its key, to issue client certificates (ClientCert)
	certFile      string // serving certificate (PEM), signed by the CA
	keyFile       string // serving key
	saKeyFile     string // service-account signing key (private, PEM)
	saPubFile     string // service-account verification key (public, PEM)
	tokenFile     string // static token auth file (CSV) for the apiserver
	adminToken    string // the bearer token of the admin user
	adminTokenRaw string // path of a file holding just adminToken
}

const (
	adminUser   = "admin"
	adminGroups = "system:masters"
)

// serviceIP is the first address of serviceCIDR: the ClusterIP of
// default/kubernetes, which the serving certificate also names.
const (
	serviceCIDR = "10.0.0.0/16"
	serviceIP   = "10.0.0.1"
)

func writeCredentials(dir string, advertise net.IP, extraIPs ...net.IP) (*credentials, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	c := &credentials{
		caFile:        filepath.Join(dir, "ca.crt"),
		caKeyFile:     filepath.Join(dir, "ca.key"),
		certFile:      filepath.Join(dir, "apiserver.crt"),
		keyFile:       filepath.Join(dir, "apiserver.key"),
		saKeyFile:     filepath.Join(dir, "sa.key"),
		saPubFile:     filepath.Join(dir, "sa.pub"),
		tokenFile:     filepath.Join(dir, "tokens.csv"),
		adminTokenRaw: filepath.Join(dir, "admin.token"),
	}

	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "haproxy-k8s-sync test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}

	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{
			"localhost",
			"kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local",
		},
		IPAddresses: append([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP), advertise}, extraIPs...),
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}

	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	c.adminToken = fmt.Sprintf("%x", tok)

	files := []struct {
		path string
		data []byte
	}{
		{c.caFile, pemBlock("CERTIFICATE", caDER)},
		{c.caKeyFile, ecKeyPEM(caKey)},
		{c.certFile, pemBlock("CERTIFICATE", srvDER)},
		{c.keyFile, ecKeyPEM(srvKey)},
		{c.saKeyFile, ecKeyPEM(saKey)},
		{c.saPubFile, pubKeyPEM(&saKey.PublicKey)},
		// token,user,uid,"group1,group2"
		{c.tokenFile, fmt.Appendf(nil, "%s,%s,%s,\"%s\"\n", c.adminToken, adminUser, adminUser, adminGroups)},
		{c.adminTokenRaw, []byte(c.adminToken)},
	}
	for _, f := range files {
		if f.data == nil {
			return nil, fmt.Errorf("encoding %s", f.path)
		}
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func ecKeyPEM(k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil
	}
	return pemBlock("EC PRIVATE KEY", der)
}

func pubKeyPEM(k *ecdsa.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		return nil
	}
	return pemBlock("PUBLIC KEY", der)
}
