package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/staticpod"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
)

// `render static-pod`: the real apiserver accepts both manifests (server-
// side dry run), and HAProxy started as the manifest says, on the config
// it names, answers its liveness probe and carries a real client's
// requests to the apiserver, none failing while one of its two servers
// is dead.
func TestStaticPodProxiesTheAPIServer(t *testing.T) {
	l := newStaticPodLab(t)
	// dead is an apiserver that does not answer: nothing listens there.
	listen, monitor, dead := l.addr(), l.addr(), l.addr()
	release := filepath.Join(l.dir, "release.yaml")
	if err := os.WriteFile(release, []byte("haproxy-router: docker.io/library/haproxy:2.6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	render := func(out string, extra ...string) *corev1.Pod {
		t.Helper()
		pod := l.render(out, append([]string{"--listen", listen, "--monitor-address", monitor, "--bootstrap-servers", l.api + "," + dead,
			"--release-images", release}, extra...)...)
		if _, err := l.client.CoreV1().Pods(pod.Namespace).Create(bg, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatalf("apiserver rejects the static pod %v: %v", extra, err)
		}
		return pod
	}
	render(filepath.Join(l.dir, "live"), "--live", "--live-kubeconfig", "/etc/kubernetes/apiserver-proxy.kubeconfig")
	pod := render(filepath.Join(l.dir, "plain"))

	hap := pod.Spec.Containers[0]
	startAsManifest(t, hap)
	probe := hap.LivenessProbe.HTTPGet
	probeURL := "http://" + net.JoinHostPort(probe.Host, probe.Port.String()) + probe.Path
	(&env{t: t}).eventually("liveness probe answers 200", func() error {
		resp, err := http.Get(probeURL)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})

	cfg := rest.CopyConfig(l.kube.Config)
	cfg.Host = "https://" + listen
	cfg.TLSClientConfig.ServerName = "localhost" // the apiserver's certificate, seen through the proxy
	through, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := through.CoreV1().Namespaces().Get(bg, "kube-system", metav1.GetOptions{}); err != nil {
			t.Fatalf("request %d through the proxy: %v", i, err)
		}
	}
	// A connection per request, so round robin sends half of them to the
	// dead apiserver until HAProxy's checks mark it down: none fails, a
	// refused connection is retried on the other server (retries, option
	// redispatch).
	ca, err := os.ReadFile(l.kube.CAPath)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	fresh := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
	for i := range 40 {
		resp, err := fresh.Get("https://" + listen + "/readyz")
		if err != nil {
			t.Fatalf("connection %d through the proxy: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("connection %d through the proxy: status %d", i, resp.StatusCode)
		}
	}
	t.Run("servers read from the cluster", func(t *testing.T) { staticPodSources(t, l.kube) })
}

// With --kubeconfig, render reads the apiservers from the sources in
// their order, as run --mode=apiserver chooses them; a source with invalid
// content fails the render and nothing is written.
func staticPodSources(t *testing.T, kube *kubeapi.Server) {
	client := kube.Client(t)
	render := func(sources string) (string, error) {
		out := t.TempDir()
		var stderr bytes.Buffer
		err := staticPodRender([]string{"-o", out, "--kubeconfig", kube.KubeconfigPath, "--apiserver-sources", sources,
			"--apiserver-configmap", "kube-system/apiservers", "--bootstrap-servers", "192.0.2.1"}, &stderr)
		if err != nil {
			if files, _ := os.ReadDir(out); len(files) != 0 {
				t.Errorf("a failed render wrote %d files", len(files))
			}
			return "", err
		}
		cfg, err := os.ReadFile(filepath.Join(out, staticpod.ConfigFile))
		if err != nil {
			t.Fatal(err)
		}
		var servers []string
		for _, line := range strings.Split(string(cfg), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "server" {
				servers = append(servers, f[2])
			}
		}
		return strings.Join(servers, ",") + " " + strings.TrimSpace(stderr.String()), nil
	}
	step := func(what, sources, want string) {
		t.Helper()
		got, err := render(sources)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !strings.HasPrefix(got, want+" ") || !strings.Contains(got, "from source") {
			t.Errorf("%s: got %q, want servers %s", what, got, want)
		}
	}
	all := "endpointslice,nodes,configmap,static"
	step("empty cluster: the static list", all, "192.0.2.1:6443")

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cp1", Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.11"}}}}
	if _, err := client.CoreV1().Nodes().Create(bg, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	step("control-plane node", all, "192.0.2.11:6443")

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "apiservers"},
		Data: map[string]string{"servers": "192.0.2.21:7443\n192.0.2.22\n"}}
	if _, err := client.CoreV1().ConfigMaps(cm.Namespace).Create(bg, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	step("nodes before configmap", all, "192.0.2.11:6443")
	step("configmap first", "configmap,nodes,static", "192.0.2.21:7443,192.0.2.22:6443")

	port, name := int32(6443), "https"
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "default", Name: "kubernetes", Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.31"}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
	}
	if _, err := client.DiscoveryV1().EndpointSlices("default").Create(bg, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	step("endpointslice first", all, "192.0.2.31:6443")

	cm.Data["servers"] = "192.0.2.21:7443\nnot-an-address; global\n"
	if _, err := client.CoreV1().ConfigMaps(cm.Namespace).Update(bg, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := render("configmap,static"); err == nil || !strings.Contains(err.Error(), "configmap") {
		t.Errorf("invalid ConfigMap: got %q, error %v", got, err)
	}
}

// staticPodLab is where the static-pod tests start: a real apiserver and
// an address of the test's own in 127.85.0.0/16 for the pod's listeners
// (ports from the kernel: addr).
type staticPodLab struct {
	t      *testing.T
	kube   *kubeapi.Server
	client kubernetes.Interface
	api    string // the apiserver's host:port
	ip     string
	dir    string // the test's temporary directory
}

func newStaticPodLab(t *testing.T) *staticPodLab {
	kube := kubeapi.Start(t)
	apiURL, err := url.Parse(kube.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &staticPodLab{t: t, kube: kube, client: kube.Client(t), api: apiURL.Host,
		ip: fmt.Sprintf("127.85.%d.%d", 1+rand.IntN(250), 1+rand.IntN(250)), dir: t.TempDir()}
}

// addr is a free ip:port of the lab's address.
func (l *staticPodLab) addr() string { return freeAddr(l.t, l.ip) }

// render runs `render static-pod` with args, writing into dir (the node's
// files: -o and --config-dir) and checking the apiservers with the lab's
// CA, and returns the manifest it wrote.
func (l *staticPodLab) render(dir string, args ...string) *corev1.Pod {
	l.t.Helper()
	args = append([]string{"haproxy-k8s-sync", "render", "static-pod", "-o", dir, "--config-dir", dir,
		"--apiserver-ca-file", l.kube.CAPath}, args...)
	var stderr bytes.Buffer
	if code := cli.Main(args, nil, os.Stdout, &stderr); code != 0 {
		l.t.Fatalf("render static-pod exited %d: %s", code, stderr.String())
	}
	raw, err := os.ReadFile(filepath.Join(dir, staticpod.ManifestFile))
	if err != nil {
		l.t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(raw, &pod); err != nil {
		l.t.Fatalf("manifest is not a v1.Pod: %v", err)
	}
	return &pod
}

// staticPodRender runs render static-pod with the options every render of
// these tests shares.
func staticPodRender(args []string, stderr *bytes.Buffer) error {
	args = append([]string{"haproxy-k8s-sync", "render", "static-pod", "--listen", "127.85.0.1:6443",
		"--apiserver-check-insecure-skip-verify", "--shared-ingress"}, args...)
	if code := cli.Main(args, nil, os.Stdout, stderr); code != 0 {
		return fmt.Errorf("exit %d: %s", code, stderr.String())
	}
	return nil
}

// startAsManifest runs the container's command with its arguments, the
// haproxy binary being the one tests use, and stops it at the end.
func startAsManifest(t *testing.T, c corev1.Container) {
	t.Helper()
	if len(c.Command) != 1 || c.Command[0] != "haproxy" {
		t.Fatalf("unexpected command %v", c.Command)
	}
	var out bytes.Buffer
	cmd := exec.Command(haproxytest.Bin(), c.Args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("haproxy output:\n%s", out.String())
		}
	})
}

// freeAddr is ip:port with a port that was free on ip a moment ago.
func freeAddr(t *testing.T, ip string) string {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return net.JoinHostPort(ip, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
}
