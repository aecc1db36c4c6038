package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/staticpod"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/testcert"
)

var staticPodBase = []string{"--listen", "172.20.0.1:6443", "--bootstrap-servers", "10.0.0.10:6443, 10.0.0.11,10.0.0.12:6443",
	"--apiserver-check-insecure-skip-verify"}

// nodeCA is a CA path on the node: render takes it as given; haproxy -c,
// which reads it, gets a real file in its place.
const nodeCA = "/etc/kubernetes/pki/ca.crt"

// runStaticPod runs `render static-pod` writing into a new directory and
// returns the manifest, the config and stderr.
func runStaticPod(t *testing.T, getenv func(string) string, args ...string) (*corev1.Pod, []byte, []byte, string) {
	t.Helper()
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if err := staticPodCmd(append(args, "-o", dir), getenv, &out, &errb); err != nil {
		t.Fatalf("render static-pod: %v\n%s", err, errb.String())
	}
	if out.Len() != 0 {
		t.Errorf("with -o, stdout should be empty: %q", out.String())
	}
	manifest, err := os.ReadFile(filepath.Join(dir, staticpod.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, staticpod.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(manifest, &pod); err != nil {
		t.Fatalf("manifest is not a v1.Pod: %v", err)
	}
	return &pod, manifest, cfg, errb.String()
}

func TestStaticPodGolden(t *testing.T) {
	release := filepath.Join(t.TempDir(), "release.yaml")
	if err := os.WriteFile(release, []byte("haproxy-router: quay.io/release/haproxy-router@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ca, _ := testcert.Files(t)
	for _, tc := range []struct {
		name    string
		args    []string
		source  string
		wantCfg []string
	}{
		{"plain", append(slices.Clone(staticPodBase), "--release-images", release), "release payload component haproxy-router",
			[]string{"bind 172.20.0.1:6443", "server s1 10.0.0.10:6443", "server s2 10.0.0.11:6443", "monitor-uri /healthz",
				"option httpchk GET /readyz", "check-ssl verify none"}},
		{"live", []string{"--listen", "172.20.0.1:6443", "--bootstrap-servers", "10.0.0.10:6443,10.0.0.11:6443",
			"--apiserver-ca-file", nodeCA, "--apiserver-sources", "configmap,static", "--apiserver-configmap", "kube-system/apiservers",
			"--pool", "testdata/staticpod/pool.yaml", "--live", "--live-kubeconfig", "/etc/kubernetes/apiserver-proxy.kubeconfig"},
			"annotation haproxy-k8s-sync.io/haproxy-image on NodePool clusters/workers",
			[]string{"stats socket /run/haproxy-k8s-sync/admin.sock", "server-state-file /run/haproxy-k8s-sync/server-state", "verify required ca-file " + nodeCA}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, manifest, cfg, stderr := runStaticPod(t, env(nil), tc.args...)
			golden.Assert(t, "staticpod/"+tc.name+".yaml", manifest)
			golden.Assert(t, "staticpod/"+tc.name+".cfg", cfg)
			golden.HAProxyAccepts(t, bytes.ReplaceAll(cfg, []byte(nodeCA), []byte(ca)))
			for _, want := range tc.wantCfg {
				if !bytes.Contains(cfg, []byte(want)) {
					t.Errorf("config lacks %q", want)
				}
			}
			if got := pod.Annotations[staticpod.ImageSourceAnnotation]; got != tc.source {
				t.Errorf("image source annotation %q, want %q", got, tc.source)
			}
			if !strings.Contains(stderr, "(from "+tc.source+")") {
				t.Errorf("stderr does not say which source won: %q", stderr)
			}
			if !pod.Spec.HostNetwork || pod.Spec.PriorityClassName != "system-node-critical" {
				t.Errorf("not a host-network system-node-critical pod: %+v", pod.Spec)
			}
			hap := pod.Spec.Containers[0]
			if hap.LivenessProbe == nil || hap.LivenessProbe.HTTPGet == nil || hap.LivenessProbe.HTTPGet.Port.IntValue() != 9444 ||
				!bytes.Contains(cfg, []byte("bind 127.0.0.1:9444\n\tmonitor-uri "+hap.LivenessProbe.HTTPGet.Path)) {
				t.Errorf("liveness probe does not ask the config's monitor frontend: %+v", hap.LivenessProbe)
			}
			if hap.Resources.Requests.Cpu().IsZero() || hap.Resources.Requests.Memory().IsZero() {
				t.Error("no resource requests")
			}
			if m := hap.VolumeMounts[0]; m.Name != "config" || !m.ReadOnly {
				t.Errorf("config mount %+v is not read-only", m)
			}
		})
	}
}

// The hash annotation follows the config and the image, so the kubelet
// restarts the pod when either changes, and only then.
func TestStaticPodHashFollowsConfigAndImage(t *testing.T) {
	shared := env(map[string]string{staticpod.SharedIngressEnv: "quay.io/a/haproxy:1"})
	hash := func(getenv func(string) string, args ...string) string {
		pod, _, _, _ := runStaticPod(t, getenv, args...)
		return pod.Annotations[staticpod.HashAnnotation]
	}
	base := hash(shared, append(staticPodBase, "--shared-ingress")...)
	if again := hash(shared, append(staticPodBase, "--shared-ingress")...); again != base {
		t.Errorf("same input, different hash: %s, %s", base, again)
	}
	otherServers := hash(shared, "--listen", "172.20.0.1:6443", "--bootstrap-servers", "10.0.0.10:6443", "--shared-ingress", "--apiserver-check-insecure-skip-verify")
	otherImage := hash(env(map[string]string{staticpod.SharedIngressEnv: "quay.io/a/haproxy:2"}), append(staticPodBase, "--shared-ingress")...)
	if otherServers == base || otherImage == base {
		t.Errorf("hash did not change: base %s, other servers %s, other image %s", base, otherServers, otherImage)
	}
}

// Without a CA (nor leave to skip verification) the checks are TCP
// connects, as in run --mode=apiserver, and the command warns.
func TestStaticPodTCPCheckWarns(t *testing.T) {
	_, _, cfg, stderr := runStaticPod(t, env(nil), "--listen", "172.20.0.1:6443", "--bootstrap-servers", "10.0.0.1", "--shared-ingress")
	if !strings.Contains(stderr, "warning: no --apiserver-ca-file") {
		t.Errorf("no warning on stderr: %q", stderr)
	}
	if !bytes.Contains(cfg, []byte("default-server check inter 1s rise 2 fall 2\n")) || bytes.Contains(cfg, []byte("httpchk")) {
		t.Errorf("not a TCP check:\n%s", cfg)
	}
}

// A client certificate for the checks (clusters without anonymous
// /readyz): named in the config, mounted read-only; HAProxy loads it.
func TestStaticPodClientCert(t *testing.T) {
	const nodePEM = "/var/lib/kubelet/pki/kubelet-client-current.pem"
	ca, both := testcert.Files(t)
	pod, _, cfg, _ := runStaticPod(t, env(nil), "--listen", "172.20.0.1:6443", "--bootstrap-servers", "10.0.0.1",
		"--shared-ingress", "--apiserver-ca-file", nodeCA, "--apiserver-check-pem", nodePEM)
	if !bytes.Contains(cfg, []byte("ca-file "+nodeCA+" crt "+nodePEM+"\n")) {
		t.Errorf("config does not present the certificate:\n%s", cfg)
	}
	golden.HAProxyAccepts(t, bytes.ReplaceAll(bytes.ReplaceAll(cfg, []byte(nodeCA), []byte(ca)), []byte(nodePEM), []byte(both)))
	found := false
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		found = found || (m.MountPath == nodePEM && m.ReadOnly)
	}
	if !found {
		t.Error("the PEM is not mounted read-only")
	}
}

// With --live the controller presents the same PEM: its run flags name
// the file the seed config names, mounted read-only into every container;
// its metrics listen where the render flags say, loopback by default.
func TestStaticPodLiveClientCertAndMetrics(t *testing.T) {
	const nodePEM = "/var/lib/kubelet/pki/kubelet-client-current.pem"
	for _, tc := range []struct {
		name, want string
		args       []string
	}{
		{"default", "--metrics-address=" + defaultStaticPodMetrics, nil},
		{"given", "--metrics-address=10.0.0.5:9100", []string{"--metrics-address", "10.0.0.5:9100"}},
		{"off", "--metrics-address=", []string{"--metrics-address", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--listen", "172.20.0.1:6443", "--bootstrap-servers", "10.0.0.1", "--shared-ingress",
				"--apiserver-ca-file", nodeCA, "--apiserver-check-pem", nodePEM, "--live", "--live-kubeconfig", "/k"}, tc.args...)
			pod, _, cfg, _ := runStaticPod(t, env(nil), args...)
			if !bytes.Contains(cfg, []byte("ca-file "+nodeCA+" crt "+nodePEM+"\n")) {
				t.Errorf("seed config does not present the certificate:\n%s", cfg)
			}
			sync := pod.Spec.Containers[1]
			for _, want := range []string{"--apiserver-check-pem=" + nodePEM, tc.want} {
				if !slices.Contains(sync.Args, want) {
					t.Errorf("sync args %q lack %q", sync.Args, want)
				}
			}
			mounted := false
			for _, m := range sync.VolumeMounts {
				mounted = mounted || (m.MountPath == nodePEM && m.ReadOnly)
			}
			if !mounted {
				t.Error("the PEM is not mounted read-only into the sync container")
			}
		})
	}
}

func TestStaticPodStdout(t *testing.T) {
	var out, errb bytes.Buffer
	getenv := env(map[string]string{staticpod.SharedIngressEnv: "  "})
	if err := staticPodCmd(append(staticPodBase, "--shared-ingress"), getenv, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(out.Bytes(), &pod); err != nil {
		t.Fatalf("stdout is not a v1.Pod: %v", err)
	}
	if pod.Spec.Containers[0].Image != staticpod.DefaultSharedIngressImage {
		t.Errorf("blank environment variable did not fall through to the default: %s", pod.Spec.Containers[0].Image)
	}
	if !strings.Contains(errb.String(), "haproxy.cfg not written") {
		t.Errorf("stderr does not say the config was not written: %q", errb.String())
	}
}

func TestStaticPodErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badPool := write("bad-pool.yaml", "kind: NodePool\nmetadata:\n  name: x\n  annotations:\n    haproxy-k8s-sync.io/haproxy-image: 'haproxy:1\n      global'\n")
	notObject := write("not-object.yaml", "just: a map\n")
	twoObjects := write("two.yaml", "kind: A\nmetadata: {name: a}\n---\nkind: B\nmetadata: {name: b}\n")
	release := write("release.yaml", "other: quay.io/x:1\n")
	badRelease := write("bad-release.yaml", "- a list\n")
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr error
		want    string
	}{
		{"no listen", []string{"--bootstrap-servers", "10.0.0.1:6443", "--shared-ingress", "--apiserver-check-insecure-skip-verify"}, nil, "--listen"},
		{"no servers", []string{"--listen", "172.20.0.1:6443", "--shared-ingress", "--apiserver-check-insecure-skip-verify"}, nil, "--bootstrap-servers"},
		{"server is a host name", []string{"--listen", "172.20.0.1:6443", "--bootstrap-servers", "api.example.com:6443", "--shared-ingress", "--apiserver-check-insecure-skip-verify"}, nil, "api.example.com"},
		{"CA path HAProxy would misread", append(slices.Clone(staticPodBase[:4]), "--shared-ingress", "--apiserver-ca-file", "/etc/ca file.crt"), nil, "CA file"},
		{"configmap source without a ConfigMap", append(slices.Clone(staticPodBase), "--shared-ingress", "--apiserver-sources", "configmap,static"), nil, "--apiserver-configmap"},
		{"unknown source", append(slices.Clone(staticPodBase), "--shared-ingress", "--apiserver-sources", "dns"), nil, "dns"},
		{"invalid image in pool", append(staticPodBase, "--pool", badPool, "--shared-ingress"), staticpod.ErrInvalidImage, "annotation haproxy-k8s-sync.io/haproxy-image on NodePool x"},
		{"pool not an object", append(staticPodBase, "--pool", notObject, "--shared-ingress"), staticpod.ErrInvalid, "no kind"},
		{"pool with two objects", append(staticPodBase, "--pool", twoObjects, "--shared-ingress"), staticpod.ErrInvalid, "more than one object"},
		{"release without the component", append(staticPodBase, "--release-images", release), staticpod.ErrNoImage, "release payload component haproxy-router (not set)"},
		{"release not a map", append(staticPodBase, "--release-images", badRelease), staticpod.ErrInvalid, "--release-images"},
		{"nothing found", staticPodBase, staticpod.ErrNoImage, "no --release-images"},
		{"client certificate without a CA", []string{"--listen", "172.20.0.1:6443", "--bootstrap-servers", "10.0.0.1", "--shared-ingress", "--apiserver-check-pem", "/p.pem"}, nil, "CA file"},
		{"metrics address without IP", append(slices.Clone(staticPodBase), "--shared-ingress", "--live", "--live-kubeconfig", "/k", "--metrics-address", ":9743"), nil, "--metrics-address"},
		{"live without kubeconfig", append(staticPodBase, "--shared-ingress", "--live"), nil, "--live-kubeconfig"},
		{"live with an invalid sync image", append(staticPodBase, "--shared-ingress", "--live", "--live-kubeconfig", "/k", "--sync-image", "UPPER:x"), staticpod.ErrInvalidImage, "controller image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			err := staticPodCmd(append(tc.args, "-o", out), env(nil), &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Fatalf("error %v, want one wrapping %v mentioning %q", err, tc.wantErr, tc.want)
			}
			if files, _ := os.ReadDir(out); len(files) != 0 {
				t.Errorf("a failed render wrote %d files", len(files))
			}
		})
	}
}

// The live variant's init container copies the seed config where HAProxy
// and the controller share it.
func TestInitFrom(t *testing.T) {
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.cfg")
	if err := os.WriteFile(seed, []byte("# seed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "run", "haproxy.cfg")
	args := []string{"--force", "--from", seed, "--haproxy-config", target,
		"--stats-socket", filepath.Join(dir, "run", "admin.sock"), "--state-file", filepath.Join(dir, "run", "state")}
	if err := initCmd(args, env(nil), os.Stderr); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != "# seed\n" {
		t.Errorf("init --from wrote %q", got)
	}
	args = []string{"--from", filepath.Join(dir, "missing"), "--haproxy-config", filepath.Join(dir, "x.cfg"),
		"--stats-socket", filepath.Join(dir, "a", "admin.sock"), "--state-file", filepath.Join(dir, "a", "state")}
	if err := initCmd(args, env(nil), os.Stderr); err == nil {
		t.Error("init --from a missing file succeeded")
	}
}
