package e2e

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane/dataplanetest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// The older Data Plane API sync controller's Deployment, unchanged but for
// the image: its environment alone selects the Data Plane API driver and
// the single-Service mode, against the test server standing in for the
// API (the real one cannot be installed here).
func TestDataplaneSeedEnvironment(t *testing.T) {
	kube := kubeapi.Start(t)
	client := kube.Client(t)
	probe := fmt.Sprintf("127.81.20.200:%d", freeLoopbackPort(t, "127.81.20.200"))
	api := dataplanetest.Start(t, dataplanetest.Options{Users: map[string]string{"admin": seedPassword}})
	api.Load([]dataplanetest.Section{{
		Object: dataplane.Object{"name": seedBackend, "mode": "tcp", "balance": map[string]any{"algorithm": "roundrobin"},
			"default_server": map[string]any{"check": "enabled", "inter": 5000, "rise": 2, "fall": 2}},
		Templates: []dataplane.Object{{"prefix": "ingress", "num_or_range": "5", "fqdn": "127.0.0.1", "port": 65535, "maintenance": "enabled"}},
	}}, nil)
	token := seedWorld(t, client, "127.81.20", "dp1", "dp2", "dp3")
	env := seedEnv(kube, token, api.URL)
	env["RESYNC_PERIOD"] = "1s"
	// The pod's :8080 (the old Deployment's probes), on loopback here.
	env["HAPROXY_K8S_SYNC_METRICS_ADDRESS"] = probe
	log := runSeedController(t, env)
	waitFor(t, log, "/readyz answers 200", readyz(probe))

	want := set3("127.81.20.1:30443", "127.81.20.2:30443", "127.81.20.3:30443")
	waitFor(t, log, "every node serves", func() error { return servingIs(api, seedBackend, want) })
	sec, _ := api.Backend(seedBackend)
	ds, _ := sec.Object["default_server"].(map[string]any)
	if sec.Object["adv_check"] != "tcp-check" || ds["send-proxy-v2"] != "enabled" || fmt.Sprint(ds["inter"]) != "2000" {
		t.Errorf("backend settings not applied: %v", sec.Object)
	}
	if len(sec.Templates) != 1 {
		t.Errorf("server-template lost: %v", sec.Templates)
	}

	// Node churn, and a resync period passing: no reload.
	before := api.Reloads()
	if err := lab.SetNodeExcluded(bg, client, "dp2", true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, log, "excluded dp2 leaves", func() error {
		return servingIs(api, seedBackend, set3("127.81.20.1:30443", "127.81.20.3:30443"))
	})
	if err := client.CoreV1().Nodes().Delete(bg, "dp3", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, log, "deleted dp3 leaves", func() error { return servingIs(api, seedBackend, set3("127.81.20.1:30443")) })
	// Churn goes live through the runtime endpoints; haproxy.cfg follows
	// once it settles (a second here), still without a reload.
	waitFor(t, log, "the configuration follows", func() error { return configuredIs(api, seedBackend, set3("127.81.20.1:30443")) })
	v, passes := api.Version(), strings.Count(log.String(), "dataplane pass")
	waitFor(t, log, "two resync passes", func() error {
		if n := strings.Count(log.String(), "dataplane pass"); n < passes+2 {
			return fmt.Errorf("%d passes since", n-passes)
		}
		return nil
	})
	if api.Version() != v {
		t.Errorf("resync with nothing to do wrote to the API (version %d → %d)", v, api.Version())
	}
	if got := api.Reloads(); got != before {
		t.Errorf("node churn and resyncs caused %d reloads, want 0", got-before)
	}
	if strings.Contains(log.String(), "forbidden") {
		t.Errorf("a request was forbidden with the shipped RBAC:\n%s", log.String())
	}
}

// TestDataplaneSeedBackendMissing: the operator's backend is not in
// haproxy.cfg: a Warning Event on the Service and a log line, nothing
// created.
func TestDataplaneSeedBackendMissing(t *testing.T) {
	kube := kubeapi.Start(t)
	client := kube.Client(t)
	api := dataplanetest.Start(t, dataplanetest.Options{})
	probe := fmt.Sprintf("127.81.21.200:%d", freeLoopbackPort(t, "127.81.21.200"))
	if err := lab.CreateNode(bg, client, "dpm1", "127.81.21.1", true); err != nil {
		t.Fatal(err)
	}
	createIngressService(t, client, "default")
	log := runSeedController(t, map[string]string{
		"HAPROXY_K8S_SYNC_KUBECONFIG":      kube.KubeconfigPath,
		"INGRESS_NAMESPACE":                "default",
		"INGRESS_SERVICE_NAME":             "ingress-nginx",
		"HAPROXY_DATAPLANE_URL":            api.URL,
		"HAPROXY_K8S_SYNC_METRICS_ADDRESS": probe,
	})
	waitFor(t, log, "BackendMissing event", func() error {
		evs, err := client.CoreV1().Events("default").List(bg, metav1.ListOptions{FieldSelector: "involvedObject.name=ingress-nginx"})
		if err != nil {
			return err
		}
		for _, ev := range evs.Items {
			if ev.Reason == "BackendMissing" && ev.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return fmt.Errorf("no BackendMissing event yet")
	})
	if err := contains(log.String(), `backend missing`); err != nil {
		t.Error(err)
	}
	// Passes fail, but the API answers: ready (a restart would not help).
	waitFor(t, log, "/readyz answers 200", readyz(probe))
	if _, backends := api.Names(); len(backends) != 0 {
		t.Errorf("backends created without --dataplane-create-backend: %v", backends)
	}
}

// The older controller's ingress Service, its namespace, the operator's
// backend and the Data Plane API user's password in the seed tests.
const seedNS, seedBackend, seedPassword = "ingress-nginx", "be_ingress_https", "pw-e2e"

// seedWorld makes what the older controller's Deployment finds: the
// namespace seedNS, Ready nodes named names at prefix.1, prefix.2..., the
// ingress-nginx Service with one ready endpoint on the first node, and the
// token file it returns, of the ServiceAccount of the shipped RBAC of this
// mode (deploy/rbac.yaml), nothing more.
func seedWorld(t *testing.T, client kubernetes.Interface, prefix string, names ...string) string {
	t.Helper()
	if _, err := client.CoreV1().Namespaces().Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: seedNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		if err := lab.CreateNode(bg, client, n, fmt.Sprintf("%s.%d", prefix, i+1), true); err != nil {
			t.Fatal(err)
		}
	}
	createIngressService(t, client, seedNS)
	sl := lab.SliceFor(seedNS, "ingress-nginx", 443, []lab.Endpoint{{IP: "10.244.1.1", Node: names[0], Ready: true}})
	if err := lab.ApplySlice(bg, client, sl); err != nil {
		t.Fatal(err)
	}
	return (&env{t: t, client: client, dir: t.TempDir()}).rbacTokenFileFrom("../../deploy/rbac.yaml")
}

// seedEnv is the older controller's environment for the world of
// seedWorld and the Data Plane API at apiURL (user admin): the operator's
// backend on port 30443, PROXY v2.
func seedEnv(kube *kubeapi.Server, token, apiURL string) map[string]string {
	return map[string]string{
		"HAPROXY_K8S_SYNC_API_SERVER": kube.URL, // stands in for the in-cluster config
		"HAPROXY_K8S_SYNC_TOKEN_FILE": token,
		"HAPROXY_K8S_SYNC_CA_FILE":    kube.CAPath,
		"INGRESS_NAMESPACE":           seedNS,
		"INGRESS_SERVICE_NAME":        "ingress-nginx",
		"HAPROXY_DATAPLANE_URL":       apiURL,
		"HAPROXY_DATAPLANE_USERNAME":  "admin",
		"HAPROXY_DATAPLANE_PASSWORD":  seedPassword,
		"HAPROXY_BACKEND_NAME":        seedBackend,
		"HAPROXY_BACKEND_PORT":        "30443",
		"HAPROXY_SEND_PROXY_V2":       "true",
	}
}

func createIngressService(t *testing.T, client kubernetes.Interface, namespace string) {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ingress-nginx"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeNodePort,
			Selector: map[string]string{"app": "ingress-nginx"},
			Ports: []corev1.ServicePort{
				{Name: "tcp", Port: 443, NodePort: nodePort(), Protocol: corev1.ProtocolTCP},
			},
		},
	}
	if _, err := client.CoreV1().Services(namespace).Create(bg, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func runSeedController(t *testing.T, env map[string]string) *haproxytest.LockedBuffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := &haproxytest.LockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- cli.Run(ctx, []string{"--log-level", "debug", "--udp=off"}, func(k string) string { return env[k] }, log)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("controller did not stop")
		}
		if t.Failed() {
			t.Logf("controller log:\n%s", log.String())
		}
	})
	return log
}

func waitFor(t *testing.T, log *haproxytest.LockedBuffer, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(converge)
	var err error
	for time.Now().Before(deadline) {
		if err = cond(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	t.Fatalf("%s: not reached within %s: %v", what, converge, err)
}

func servingIs(api *dataplanetest.Server, backend string, want map[string]bool) error {
	got := map[string]bool{}
	states, _ := api.Running(backend)
	for _, s := range states {
		if s.Admin == "ready" {
			got[fmt.Sprintf("%s:%d", s.Address, s.Port)] = true
		}
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("serving %v, want %v", got, want)
	}
	return nil
}

// configuredIs checks the servers of backend out of maintenance in the
// API's configuration (what a reload would run).
func configuredIs(api *dataplanetest.Server, backend string, want map[string]bool) error {
	got := map[string]bool{}
	sec, _ := api.Backend(backend)
	for _, o := range sec.Children {
		if o["maintenance"] != "enabled" {
			got[fmt.Sprintf("%v:%v", o["address"], o["port"])] = true
		}
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("configured %v, want %v", got, want)
	}
	return nil
}

func set3(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, x := range s {
		m[x] = true
	}
	return m
}

func freeLoopbackPort(t *testing.T, ip string) int {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func readyz(addr string) func() error {
	return func() error {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("readyz: %d", resp.StatusCode)
		}
		return nil
	}
}
