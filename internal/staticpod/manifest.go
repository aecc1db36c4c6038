package staticpod

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"path"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/render"
)

// Names of the files `render static-pod` writes, and of the pod.
const (
	ManifestFile = "kube-apiserver-proxy.yaml"
	ConfigFile   = "haproxy.cfg"
	PodName      = "kube-apiserver-proxy"
	PodNamespace = "kube-system"
)

// Pod annotations.
const (
	// HashAnnotation holds a hash of the effective haproxy.cfg and the
	// images: the manifest changes with either, so the kubelet restarts
	// the pod, and `grep` on a node shows which config a pod runs.
	HashAnnotation = "haproxy-k8s-sync.io/config-hash"
	// ImageSourceAnnotation says which level of the precedence gave the
	// HAProxy image (see ResolveImage).
	ImageSourceAnnotation = "haproxy-k8s-sync.io/image-source"
)

// DefaultRunDir is where, inside the pod, the live variant keeps
// HAProxy's sockets, the server-state file and the config the controller
// owns: an emptyDir both containers share.
const DefaultRunDir = "/run/haproxy-k8s-sync"

// RunDir names the files of the live variant's shared directory.
type RunDir string

// MasterSocket is HAProxy's master CLI (haproxy -S).
func (d RunDir) MasterSocket() string { return path.Join(string(d), "master.sock") }

// StatsSocket is the worker's admin socket (in the config).
func (d RunDir) StatsSocket() string { return path.Join(string(d), "admin.sock") }

// StateFile is HAProxy's server-state file (in the config).
func (d RunDir) StateFile() string { return path.Join(string(d), "server-state") }

// Config is the config HAProxy runs, copied from the seed at pod start.
func (d RunDir) Config() string { return path.Join(string(d), ConfigFile) }

const monitorPeriod = 10

// ErrInvalid classifies bad options.
var ErrInvalid = errors.New("invalid static pod option")

// Options describe the pod. Config is the haproxy.cfg placed in ConfigDir
// on the node (for the hash; the pod reads it from there).
type Options struct {
	Image     Image
	Config    []byte
	ConfigDir string         // host directory of haproxy.cfg, mounted read-only at the same path
	Listen    netip.AddrPort // where HAProxy listens (for NET_BIND_SERVICE below 1024)
	Monitor   netip.AddrPort // HAProxy's monitor frontend: the liveness probe's target
	// Files are files on the node that the config names (the CA the
	// health checks verify the apiservers with, their client certificate):
	// mounted read-only at the same path into every container.
	Files []NodeFile
	Live  *Live // nil: HAProxy alone, the config changes with the manifest
}

// Live adds the controller beside HAProxy: `haproxy-k8s-sync run` with
// Args against the master and admin sockets on a shared emptyDir, so the
// servers follow the cluster without a new manifest. HAProxy then runs a
// copy of the seed config (ConfigDir/haproxy.cfg) that the controller
// owns.
type Live struct {
	Image      string   // haproxy-k8s-sync image
	Args       []string // arguments of `haproxy-k8s-sync` (run ...), built by the caller
	Kubeconfig string   // kubeconfig file on the node, mounted read-only at the same path
	StateDir   string   // node directory kept across pod restarts, mounted at the same path
	RunDir     RunDir   // the shared emptyDir inside the pod
}

// NodeFile is a file on the node, mounted as the volume Name.
type NodeFile struct{ Name, Path string }

// Hash is the value of HashAnnotation: the first 16 hex digits of the
// SHA-256 of the images and the config.
func Hash(o Options) string {
	h := sha256.New()
	h.Write([]byte(o.Image.Ref + "\n"))
	if o.Live != nil {
		h.Write([]byte(o.Live.Image + "\n"))
	}
	h.Write(o.Config)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Pod builds the static pod.
func Pod(o Options) (*corev1.Pod, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	configPath := path.Join(o.ConfigDir, ConfigFile)
	haproxyCfg := configPath
	mounts := []corev1.VolumeMount{{Name: "config", MountPath: o.ConfigDir, ReadOnly: true}}
	for _, f := range o.Files {
		mounts = append(mounts, corev1.VolumeMount{Name: f.Name, MountPath: f.Path, ReadOnly: true})
	}
	args := []string{"-W", "-f", haproxyCfg}
	if o.Live != nil {
		run := o.Live.RunDir
		haproxyCfg = run.Config()
		mounts = append(mounts, corev1.VolumeMount{Name: "run", MountPath: string(run)})
		args = []string{"-W", "-S", run.MasterSocket() + ",mode,600", "-f", haproxyCfg}
	}
	hap := corev1.Container{
		Name:         "haproxy",
		Image:        o.Image.Ref,
		Command:      []string{"haproxy"},
		Args:         args,
		VolumeMounts: mounts,
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("10m"),
			corev1.ResourceMemory: resource.MustParse("32Mi"),
		}},
		LivenessProbe: &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Host: probeHost(o.Monitor.Addr()),
				Port: intstr.FromInt32(int32(o.Monitor.Port())),
				Path: render.MonitorURI,
			}},
			PeriodSeconds:    monitorPeriod,
			TimeoutSeconds:   2,
			FailureThreshold: 3,
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	if o.Listen.Port() < 1024 {
		hap.SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}}}
	}
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      PodName,
			Namespace: PodNamespace,
			Labels:    map[string]string{"k8s-app": PodName, "app.kubernetes.io/managed-by": "haproxy-k8s-sync"},
			Annotations: map[string]string{
				HashAnnotation:        Hash(o),
				ImageSourceAnnotation: o.Image.Source,
			},
		},
		Spec: corev1.PodSpec{
			HostNetwork:                  true,
			PriorityClassName:            "system-node-critical",
			AutomountServiceAccountToken: new(false),
			Containers:                   []corev1.Container{hap},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: o.ConfigDir, Type: new(corev1.HostPathDirectory)}}}},
		},
	}
	for _, f := range o.Files {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: f.Name, VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: f.Path, Type: new(corev1.HostPathFile)}}})
	}
	if o.Live != nil {
		addLive(pod, o, configPath, mounts)
	}
	return pod, nil
}

// addLive adds the seed init container, the controller and their volumes.
// shared are the mounts of the HAProxy container, which the controller
// needs too: it checks the configs it writes.
func addLive(pod *corev1.Pod, o Options, seed string, shared []corev1.VolumeMount) {
	l := o.Live
	pod.Spec.InitContainers = []corev1.Container{{
		Name:  "seed",
		Image: l.Image,
		// HAProxy starts on the rendered config (the bootstrap servers)
		// before the controller has reached any apiserver.
		Args: []string{"init", "--force", "--from=" + seed, "--haproxy-config=" + l.RunDir.Config(),
			"--stats-socket=" + l.RunDir.StatsSocket(), "--state-file=" + l.RunDir.StateFile()},
		VolumeMounts:             slices.Clone(shared),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
		Name:  "sync",
		Image: l.Image,
		Args:  l.Args,
		Env: []corev1.EnvVar{{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{
			ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
		VolumeMounts: append(slices.Clone(shared),
			corev1.VolumeMount{Name: "state", MountPath: l.StateDir},
			corev1.VolumeMount{Name: "kubeconfig", MountPath: l.Kubeconfig, ReadOnly: true}),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	})
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		corev1.Volume{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "state", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: l.StateDir, Type: new(corev1.HostPathDirectoryOrCreate)}}},
		corev1.Volume{Name: "kubeconfig", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: l.Kubeconfig, Type: new(corev1.HostPathFile)}}},
	)
}

func (o Options) validate() error {
	if o.Image.Ref == "" {
		return fmt.Errorf("%w: no image", ErrInvalid)
	}
	if !path.IsAbs(o.ConfigDir) {
		return fmt.Errorf("%w: config directory %q: want an absolute path on the node", ErrInvalid, o.ConfigDir)
	}
	for _, f := range o.Files {
		if !path.IsAbs(f.Path) || f.Name == "" {
			return fmt.Errorf("%w: file %q for %s: want an absolute path on the node", ErrInvalid, f.Path, f.Name)
		}
	}
	if !o.Monitor.IsValid() || o.Monitor.Port() == 0 {
		return fmt.Errorf("%w: the liveness probe needs a monitor address", ErrInvalid)
	}
	if l := o.Live; l != nil {
		if err := ValidateImage(l.Image); err != nil {
			return fmt.Errorf("controller image: %w", err)
		}
		if !path.IsAbs(l.Kubeconfig) || !path.IsAbs(l.StateDir) {
			return fmt.Errorf("%w: the live variant needs absolute node paths of a kubeconfig and a state directory", ErrInvalid)
		}
		if !model.ValidFilePath(string(l.RunDir)) {
			return fmt.Errorf("%w: run directory %q: want an absolute path of letters, digits and /-._", ErrInvalid, l.RunDir)
		}
	}
	return nil
}

// probeHost is where the kubelet sends the liveness probe: the monitor's
// own address, or loopback when it listens on every address.
func probeHost(a netip.Addr) string {
	switch {
	case a.IsUnspecified() && a.Is6():
		return "::1"
	case a.IsUnspecified():
		return "127.0.0.1"
	}
	return a.String()
}

// Manifest is the pod as YAML, with a header saying where it came from.
func Manifest(pod *corev1.Pod) ([]byte, error) {
	b, err := yaml.Marshal(pod)
	if err != nil {
		return nil, err
	}
	// status is empty, and a static pod has no creation time.
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	if b, err = yaml.Marshal(m); err != nil {
		return nil, err
	}
	header := "# Generated by haproxy-k8s-sync render static-pod. " + HashAnnotation + " changes with the config and images.\n"
	return append([]byte(header), b...), nil
}
