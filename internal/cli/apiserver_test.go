package cli

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/apiserver"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

// Bad flags of the apiserver mode stop `run` with a message naming the
// flag, before anything touches HAProxy.
func TestAPIServerFlagErrors(t *testing.T) {
	ca, both := testcert.Files(t)
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
		{"from the environment", nil, map[string]string{"HAPROXY_K8S_SYNC_MODE": "apiserver", "HAPROXY_K8S_SYNC_BOOTSTRAP_SERVERS": "x"}, "--bootstrap-servers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if c.env == nil {
				args = append([]string{"--mode", "apiserver", "--apiserver-state-file", t.TempDir() + "/state.json"}, args...)
			}
			err := Run(context.Background(), args, env(c.env), io.Discard)
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
		a := &apiserverFlags{sources: apiserver.DefaultSources, port: 6443, stateFile: t.TempDir() + "/s.json", caFile: c.ca,
			inter: apiserver.DefaultInter, rise: 2, fall: 2}
		o, err := a.options(log)
		if err != nil {
			t.Fatal(err)
		}
		if got := o.Shape.Check.HTTP.SSL; got != c.https {
			t.Errorf("CA %s: HTTPS check %v, want %v", c.ca, got, c.https)
		}
	}
}
