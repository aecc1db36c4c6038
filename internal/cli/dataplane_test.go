package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
)

func TestDataplaneSelectionAndLegacyEnv(t *testing.T) {
	for _, tc := range []struct {
		name        string
		env         map[string]string
		args        []string
		dataplane   bool
		service     string
		backend     string
		track       bool // every-Service mode: servers follow their node
		errContains string
	}{
		{name: "nothing: the HAProxy driver", dataplane: false},
		{name: "the seed's URL alone: its defaults", env: map[string]string{"HAPROXY_DATAPLANE_URL": "http://h:5555"},
			dataplane: true, service: "ingress-nginx/ingress-nginx", backend: "ingress-nginx"},
		{name: "the seed's environment", env: map[string]string{"HAPROXY_DATAPLANE_URL": "http://h:5555", "INGRESS_NAMESPACE": "ing",
			"INGRESS_SERVICE_NAME": "front", "HAPROXY_BACKEND_NAME": "be_ingress_https"},
			dataplane: true, service: "ing/front", backend: "be_ingress_https"},
		{name: "service name defaults to the Service", env: map[string]string{"HAPROXY_DATAPLANE_URL": "http://h:5555", "INGRESS_SERVICE_NAME": "front"},
			dataplane: true, service: "ingress-nginx/front", backend: "front"},
		{name: "our URL variable: every Service", env: map[string]string{"HAPROXY_K8S_SYNC_DATAPLANE_URL": "http://h:5555"}, dataplane: true, track: true},
		{name: "driver named haproxy wins", env: map[string]string{"HAPROXY_DATAPLANE_URL": "http://h:5555", "HAPROXY_K8S_SYNC_DRIVER": "haproxy"},
			dataplane: false, service: "ingress-nginx/ingress-nginx"},
		{name: "dataplane without URL", args: []string{"--driver=dataplane"}, errContains: "needs --dataplane-url"},
		{name: "unknown driver", args: []string{"--driver=nginx"}, errContains: "want haproxy or dataplane"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFlagSet("run")
			var f runFlags
			f.shape.register(fs, func(k string) string { return tc.env[k] })
			fs.DurationVar(&f.resync, "resync-period", 0, "")
			f.dp.register(fs)
			if err := parse(fs, tc.args, func(k string) string { return tc.env[k] }, &f.shape); err != nil {
				t.Fatal(err)
			}
			got, err := f.dp.selected()
			if tc.errContains != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errContains) {
					t.Fatalf("err %v, want %q", err, tc.errContains)
				}
				return
			}
			if err != nil || got != tc.dataplane {
				t.Fatalf("dataplane=%v err=%v, want %v", got, err, tc.dataplane)
			}
			dopts, err := f.desiredOptions()
			if err != nil {
				t.Fatal(err)
			}
			if dopts.Service != tc.service {
				t.Errorf("service %q, want %q", dopts.Service, tc.service)
			}
			if !got {
				return
			}
			dopts = f.chooseDriver(got).capabilities(capabilities{}).shape(dopts)
			t2 := dpTarget{url: f.dp.url, user: f.dp.user, passwordFile: f.dp.passwordFile, tokenFile: f.dp.tokenFile}
			if _, err := f.dp.newDriverAt(t2, dopts, func(k string) string { return tc.env[k] }, nil, nil); err != nil {
				t.Fatal(err)
			}
			if dopts.Backend != tc.backend || dopts.TrackNodes != tc.track {
				t.Errorf("backend %q trackNodes %v, want %q and %v", dopts.Backend, dopts.TrackNodes, tc.backend, tc.track)
			}
			// The default check (auto): in single-Service mode the servers
			// are checked by themselves (the operator's backend follows no
			// node); in every-Service mode they follow their node.
			if be := dataplaneBackend(t, dopts); be.Check.Enabled == tc.track || be.TrackNodes != tc.track {
				t.Errorf("Data Plane API backend with the default check: %+v, want following its node %v", be, tc.track)
			}
		})
	}
}

// Secrets never reach --help, errors or logs.
func TestDataplaneSecretsStayHidden(t *testing.T) {
	const pw, tok = "hunter2-password-value", "tok-secret-value"
	env := map[string]string{"HAPROXY_DATAPLANE_URL": "http://user:" + pw + "@127.81.0.9:1", "HAPROXY_DATAPLANE_PASSWORD": pw,
		"HAPROXY_DATAPLANE_USERNAME": "admin", "HAPROXY_DATAPLANE_TOKEN": tok}
	var out bytes.Buffer
	err := Run(context.Background(), []string{"-h"}, func(k string) string { return env[k] }, &out)
	if err != nil || !strings.Contains(out.String(), "--dataplane-url") || strings.Contains(out.String(), pw) || strings.Contains(out.String(), tok) {
		t.Errorf("--help: err=%v, output shows a secret:\n%s", err, out.String())
	}
	for _, args := range [][]string{nil, {"--dataplane-token-file", filepath.Join(t.TempDir(), "missing")}} {
		out.Reset()
		kube := filepath.Join(t.TempDir(), "kubeconfig")
		if err := os.WriteFile(kube, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.81.0.9:1'}}]\ncontexts: [{name: c, context: {cluster: c}}]\ncurrent-context: c\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		err := Run(context.Background(), append([]string{"--kubeconfig", kube}, args...), func(k string) string { return env[k] }, &out)
		if err == nil {
			t.Fatal("want an error (credentials in the URL, or both a password and a token)")
		}
		if msg := err.Error() + out.String(); strings.Contains(msg, pw) || strings.Contains(msg, tok) {
			t.Errorf("a secret leaked: %s", msg)
		}
	}
}

func TestDataplaneLegacyProbesAndResync(t *testing.T) {
	newFS := func() (*pflag.FlagSet, *runFlags) {
		fs := newFlagSet("run")
		f := &runFlags{}
		f.shape.register(fs, nil)
		fs.DurationVar(&f.resync, "resync-period", 0, "")
		f.metrics.register(fs)
		f.dp.register(fs)
		return fs, f
	}
	fs, f := newFS()
	env := map[string]string{"HAPROXY_DATAPLANE_URL": "http://h:5555", "RESYNC_PERIOD": "45s", "WORKER_COUNT": "2"}
	if err := parse(fs, nil, func(k string) string { return env[k] }, &f.shape); err != nil {
		t.Fatal(err)
	}
	if f.metrics.addr != ":8080" || f.resync.String() != "45s" {
		t.Errorf("probes on %q (want :8080, where the old Deployment probes), resync %s", f.metrics.addr, f.resync)
	}
	fs, f = newFS()
	env["HAPROXY_K8S_SYNC_METRICS_ADDRESS"] = "127.0.0.1:9999"
	if err := parse(fs, nil, func(k string) string { return env[k] }, &f.shape); err != nil || f.metrics.addr != "127.0.0.1:9999" {
		t.Errorf("our variable does not win: %q %v", f.metrics.addr, err)
	}
	fs, f = newFS()
	env["RESYNC_PERIOD"] = "30"
	if err := parse(fs, nil, func(k string) string { return env[k] }, &f.shape); err == nil || !strings.Contains(err.Error(), "RESYNC_PERIOD") {
		t.Errorf("invalid RESYNC_PERIOD: %v, want an error naming it", err)
	}
}

// dataplaneBackend computes the backend of one Service with default
// settings, as the Data Plane API driver would get it.
func dataplaneBackend(t *testing.T, o desired.Options) *model.Backend {
	t.Helper()
	ns, name, ok := strings.Cut(o.Service, "/")
	if !ok {
		ns, name = "default", "web"
	}
	class := o.Class
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class,
		Ports: []corev1.ServicePort{{Port: 443, NodePort: 30443, Protocol: corev1.ProtocolTCP}}}}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.1"}},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	r := desired.Compute(desired.Input{Services: []*corev1.Service{svc}, Nodes: []*corev1.Node{n}}, o)
	var out []*model.Backend
	for _, b := range r.Config.Backends {
		if b.Name != model.NodesBackend {
			out = append(out, b)
		}
	}
	if len(out) != 1 {
		t.Fatalf("backends %+v", r.Config.Backends)
	}
	return out[0]
}
