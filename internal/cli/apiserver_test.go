package cli

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/apiserverlb"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// Bad flags of the apiserver mode stop `run` with a message naming the
// flag, before anything touches HAProxy.
func TestAPIServerFlagErrors(t *testing.T) {
	ca, both := testcert.Files(t)
	taken, err := net.Listen("tcp", "127.87.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	valid := []string{"--apiserver-check-insecure-skip-verify", "--bootstrap-servers", "192.0.2.1",
		"--haproxy-config", filepath.Join(t.TempDir(), "haproxy.cfg")}
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"unknown mode", []string{"--mode", "ingress"}, nil, "--mode"},
		{"unknown source", []string{"--apiserver-sources", "endpointslice,dns"}, nil, `source "dns"`},
		{"bad bootstrap server", []string{"--bootstrap-servers", "192.0.2.1:6443,cp-2:6443"}, nil, "--bootstrap-servers"},
		{"injection in bootstrap", []string{"--bootstrap-servers", "192.0.2.1:6443 backup"}, nil, "--bootstrap-servers"},
		{"configmap source without name", []string{"--apiserver-sources", "configmap"}, nil, "--apiserver-configmap"},
		{"bad configmap name", []string{"--apiserver-configmap", "Kube_System/x"}, nil, "--apiserver-configmap"},
		{"bad listen", []string{"--apiserver-check-insecure-skip-verify", "--listen", "6443"}, nil, "--listen"},
		{"cert without key", []string{"--apiserver-ca-file", ca, "--apiserver-check-cert", both}, nil, "go together"},
		{"cert and key not a pair", []string{"--apiserver-ca-file", ca, "--apiserver-check-cert", both, "--apiserver-check-key", ca}, nil, "client certificate"},
		{"bad port", []string{"--apiserver-check-insecure-skip-verify", "--apiserver-port", "70000"}, nil, "--apiserver-port"},
		{"pem and cert", []string{"--apiserver-ca-file", ca, "--apiserver-check-pem", both, "--apiserver-check-cert", both, "--apiserver-check-key", both}, nil, "one or the other"},
		{"relative pem", []string{"--apiserver-ca-file", ca, "--apiserver-check-pem", "client.pem"}, nil, "--apiserver-check-pem"},
		{"pem without CA", []string{"--apiserver-check-pem", both}, nil, "needs the CA file"},
		{"stats page beyond loopback", append([]string{"--stats-address", "192.0.2.1:8404"}, valid...), nil, "not a loopback address"},
		{"stats auth without page", append([]string{"--stats-auth-file", both}, valid...), nil, "--stats-auth-file needs --stats-address"},
		{"metrics address taken", append([]string{"--metrics-address", taken.Addr().String()}, valid...), nil, "--metrics-address"},
		{"from the environment", nil, map[string]string{"HAPROXY_K8S_SYNC_MODE": "apiserver", "HAPROXY_K8S_SYNC_BOOTSTRAP_SERVERS": "x"}, "--bootstrap-servers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if c.env == nil {
				args = append([]string{"--mode", "apiserver", "--apiserver-state-file", t.TempDir() + "/state.json"}, args...)
			}
			// Bounded: a case whose flags all pass would run until then.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := Run(ctx, args, env(c.env), io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// Before kubeadm init the CA file does not exist: the mode starts with TCP
// checks instead of failing; with the file, it checks GET /readyz.
func TestAPIServerCheckFilesNotThereYet(t *testing.T) {
	ca, _ := testcert.Files(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		ca    string
		https bool
	}{{ca + ".missing", false}, {ca, true}} {
		a := &apiserverFlags{sources: apiserverlb.DefaultSources, port: 6443, stateFile: t.TempDir() + "/s.json", caFile: c.ca,
			inter: apiserverlb.DefaultInter, rise: 2, fall: 2}
		o, err := a.options(log)
		if err != nil {
			t.Fatal(err)
		}
		if got := o.Shape.Check.HTTP.SSL; got != c.https {
			t.Errorf("CA %s: HTTPS check %v, want %v", c.ca, got, c.https)
		}
	}
}

// --apiserver-check-pem: the file is named as it is (the static pod's
// seed config names it before the controller starts), nothing is written
// beside the state file; missing, the checks are TCP until a restart.
func TestAPIServerCheckPEM(t *testing.T) {
	ca, both := testcert.Files(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		pem      string
		wantCert string
	}{{both, both}, {both + ".missing", ""}} {
		state := t.TempDir()
		a := &apiserverFlags{sources: apiserverlb.DefaultSources, port: 6443, stateFile: state + "/s.json", caFile: ca, pemFile: c.pem,
			inter: apiserverlb.DefaultInter, rise: 2, fall: 2}
		o, err := a.options(log)
		if err != nil {
			t.Fatal(err)
		}
		if got := o.Shape.Check.HTTP.CertFile; got != c.wantCert {
			t.Errorf("pem %s: check presents %q, want %q", c.pem, got, c.wantCert)
		}
		if entries, _ := os.ReadDir(state); len(entries) != 0 {
			t.Errorf("pem %s: wrote %v beside the state file", c.pem, entries)
		}
	}
}
