package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// With --log-format json every line is JSON, client-go's included: a CA
// that did not sign the apiserver's certificate makes the reflectors fail
// (through klog), and those lines come out as JSON too.
func TestLogsAreAllJSONWhenTheCAIsWrong(t *testing.T) {
	e := newEnv(t)
	wrongCA := filepath.Join(e.dir, "wrong-ca.pem")
	writeSelfSignedCA(t, wrongCA)
	args := []string{
		"--api-server", e.kube.URL, "--token-file", e.kube.TokenPath, "--ca-file", wrongCA,
		"--haproxy-config", e.cfgPath, "--haproxy-bin", haproxytest.Bin(),
		"--master-socket", e.hap.MasterSocket, "--stats-socket", e.hap.StatsSocket,
		"--state-file", filepath.Join(e.dir, "state"), "--metrics-address", "",
		"--log-format", "json", "--log-level", "debug", "--cache-sync-timeout", "4s",
		"--listeners=ports", // not this test's subject: no TPROXY set up (the default, auto, would try)
	}
	out := &haproxytest.LockedBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cli.Run(ctx, args, func(string) string { return "" }, out)
	if err == nil {
		t.Fatal("run with a wrong CA: no error")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	x509Lines := 0
	for _, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Errorf("not a JSON line: %q", l)
			continue
		}
		if strings.Contains(l, "x509") || strings.Contains(l, "certificate") {
			x509Lines++
		}
	}
	if x509Lines == 0 {
		t.Errorf("no line reports the certificate problem:\n%s", out.String())
	}
}

func writeSelfSignedCA(t *testing.T, path string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not the apiserver's CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
}
