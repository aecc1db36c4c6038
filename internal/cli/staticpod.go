package cli

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/apiserverlb"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/atomicfile"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/kubeclient"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/staticpod"
)

// defaultStaticPodMetrics is the live controller's metrics address: on
// loopback, and not run's :9742, which a Services controller on the same
// node's network may hold.
const defaultStaticPodMetrics = "127.0.0.1:9743"

type staticPodFlags struct {
	listen, bootstrap   string
	monitor             netip.AddrPort
	out, configDir      string
	pool, release, comp string
	sharedIngress, live bool
	syncImage           string
	liveKubeconfig      string
	stateDir, runDir    string
	kubeconfig          string
	sources, configMap  string
	port                int
	caFile, pem         string
	insecure            bool
	metricsAddr         string
}

func newStaticPodCmd(e *cmdEnv) *cobra.Command {
	var f staticPodFlags
	c := &cobra.Command{
		Use:   "static-pod --listen IP:PORT (--bootstrap-servers LIST | --kubeconfig FILE) [-o DIR]",
		Short: "The node-local kube-apiserver proxy: static pod manifest and haproxy.cfg",
		Long: `Render static-pod writes the node-local kube-apiserver proxy: a static pod manifest
(` + staticpod.ManifestFile + `) running HAProxy in front of the apiservers, and its ` + staticpod.ConfigFile + ` (/readyz
health checks). The HAProxy image is chosen by a precedence (a node pool's annotations, the
shared-ingress default, the release payload). --kubeconfig reads the apiservers from the cluster
once; --live adds the controller (run --mode=apiserver) so that apiservers change without a node
rollout. See docs/static-pod.md.`,
		Example: `  haproxy-k8s-sync render static-pod --listen 172.20.0.1:6443 \
      --bootstrap-servers 192.0.2.11:6443,192.0.2.12:6443 \
      --apiserver-ca-file /etc/kubernetes/pki/ca.crt --shared-ingress -o /etc/kubernetes/manifests`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := finishFlags(c.Flags(), e.getenv, nil); err != nil {
				return err
			}
			return f.run(e.getenv, e.stdout, e.stderr)
		},
	}
	f.register(c.Flags())
	return c
}

func (f *staticPodFlags) register(fs *pflag.FlagSet) {
	f.monitor = netip.MustParseAddrPort("127.0.0.1:9444")
	addGroup(fs, groupInput, scopeAll, func(fs *pflag.FlagSet) {
		fs.StringVarP(&f.out, "output-dir", "o", "", "write "+staticpod.ManifestFile+" and "+staticpod.ConfigFile+" into this directory (default: the manifest to stdout)")
		fs.StringVar(&f.configDir, "config-dir", "/etc/kubernetes/kube-apiserver-proxy", "directory of haproxy.cfg on the node, mounted read-only into the pod")
	})
	addGroup(fs, groupAPIServer, scopeAll, func(fs *pflag.FlagSet) {
		fs.StringVar(&f.listen, "listen", "", "node-local IP:PORT HAProxy listens on for the apiservers, e.g. 172.20.0.1:6443 (required)")
		fs.StringVar(&f.bootstrap, "bootstrap-servers", "", "apiservers IP:PORT or IP, comma-separated (source static)")
		fs.IntVar(&f.port, "apiserver-port", 6443, "port of the apiservers for entries without one, and for the nodes source")
		fs.StringVar(&f.kubeconfig, "kubeconfig", "", "read the apiservers from the cluster now, from --apiserver-sources (default: --bootstrap-servers only)")
		fs.StringVar(&f.sources, "apiserver-sources", apiserverlb.DefaultSources, "with --kubeconfig or --live: where the apiservers come from, in order of preference (endpointslice, nodes, configmap, static)")
		fs.StringVar(&f.configMap, "apiserver-configmap", "", "NAMESPACE/NAME of the ConfigMap of the configmap source (key servers)")
	})
	addGroup(fs, groupChecks, scopeAll, func(fs *pflag.FlagSet) {
		fs.StringVar(&f.caFile, "apiserver-ca-file", "", "CA file on the node that HAProxy's /readyz health checks verify the apiservers with (mounted read-only)")
		fs.StringVar(&f.pem, "apiserver-check-pem", "", "PEM file on the node holding the client certificate and key the /readyz health checks present (e.g. /var/lib/kubelet/pki/kubelet-client-current.pem), for clusters without anonymous access; with --live the controller's checks present it too")
		fs.BoolVar(&f.insecure, "apiserver-check-insecure-skip-verify", false, "health checks without verifying the apiservers' certificates (instead of --apiserver-ca-file)")
		fs.Var(listenValue{&f.monitor}, "monitor-address", "IP:PORT of HAProxy's monitor-uri /healthz, the liveness probe's target")
	})
	addGroup(fs, groupImage, scopeAll, func(fs *pflag.FlagSet) {
		fs.StringVar(&f.pool, "pool", "", "node-pool object (YAML or JSON) whose annotations "+staticpod.ImageAnnotation+" or "+staticpod.HyperShiftImageAnnotation+" choose the HAProxy image")
		fs.BoolVar(&f.sharedIngress, "shared-ingress", false, "below the annotations, take $"+staticpod.SharedIngressEnv+", then the built-in "+staticpod.DefaultSharedIngressImage+" (instead of the release payload)")
		fs.StringVar(&f.release, "release-images", "", "YAML map of release payload component to image (without --shared-ingress)")
		fs.StringVar(&f.comp, "release-component", staticpod.DefaultReleaseComponent, "component of --release-images holding the HAProxy image")
	})
	addGroup(fs, groupLive, scopeAll, func(fs *pflag.FlagSet) {
		fs.BoolVar(&f.live, "live", false, "add a haproxy-k8s-sync container (run --mode=apiserver) that keeps HAProxy's servers in sync with the cluster, with no new manifest")
		fs.StringVar(&f.syncImage, "sync-image", "haproxy-k8s-sync:"+Version, "with --live: the haproxy-k8s-sync image")
		fs.StringVar(&f.liveKubeconfig, "live-kubeconfig", "", "with --live: kubeconfig file on the node for the controller (RBAC of run --mode=apiserver)")
		fs.StringVar(&f.stateDir, "state-dir", "/var/lib/haproxy-k8s-sync/kube-apiserver-proxy", "with --live: node directory where the controller keeps the last apiserver list across restarts")
		fs.StringVar(&f.metricsAddr, "metrics-address", defaultStaticPodMetrics, "with --live: where the controller serves /metrics, /healthz and /readyz on the node's network (host network); off when empty")
		fs.StringVar(&f.runDir, "run-dir", staticpod.DefaultRunDir, "with --live: directory inside the pod (an emptyDir) for HAProxy's sockets and the config the controller owns")
	})
}

// run renders the static pod.
func (f *staticPodFlags) run(getenv func(string) string, stdout, stderr io.Writer) error {
	img, err := f.image(getenv)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "haproxy image %s (from %s)\n", img.Ref, img.Source)

	shape, src, err := f.apiservers(stderr)
	if err != nil {
		return err
	}
	var run staticpod.RunDir
	if f.live {
		run = staticpod.RunDir(f.runDir)
	}
	cfg := staticpod.Config(shape.Config(src.Static), f.monitor, run)
	listen := netip.AddrPortFrom(shape.Listen[0].Addr, shape.Listen[0].Port)
	opts := staticpod.Options{Image: img, Config: cfg, ConfigDir: f.configDir, Listen: listen, Monitor: f.monitor}
	if f.caFile != "" {
		opts.Files = append(opts.Files, staticpod.NodeFile{Name: "apiserver-ca", Path: f.caFile})
	}
	if f.pem != "" {
		opts.Files = append(opts.Files, staticpod.NodeFile{Name: "apiserver-check-pem", Path: f.pem})
	}
	if f.live {
		if f.liveKubeconfig == "" {
			return flagErr("--live needs --live-kubeconfig: the controller's kubeconfig on the node")
		}
		if f.metricsAddr != "" {
			if _, err := netip.ParseAddrPort(f.metricsAddr); err != nil {
				return flagErr("--metrics-address: want IP:PORT (the pod shares the node's network): %v", err)
			}
		}
		opts.Live = &staticpod.Live{Image: f.syncImage, Kubeconfig: f.liveKubeconfig, StateDir: f.stateDir, RunDir: run, Args: f.runArgs(src, run)}
	}
	pod, err := staticpod.Pod(opts)
	if err != nil {
		return err
	}
	manifest, err := staticpod.Manifest(pod)
	if err != nil {
		return err
	}
	if f.out == "" {
		fmt.Fprintf(stderr, "%s not written: give -o DIR to write it beside the manifest\n", staticpod.ConfigFile)
		_, err = stdout.Write(manifest)
		return err
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	// The config first: a kubelet watching DIR sees the manifest only once
	// the config it names is complete.
	if err := atomicfile.Write(filepath.Join(f.out, staticpod.ConfigFile), cfg, 0o644); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(f.out, staticpod.ManifestFile), manifest, 0o644)
}

// image reads the pool object and release payload and applies the
// precedence.
func (f *staticPodFlags) image(getenv func(string) string) (staticpod.Image, error) {
	in := staticpod.ImageInputs{SharedIngress: f.sharedIngress, ReleaseComponent: f.comp}
	if f.pool != "" {
		data, err := os.ReadFile(f.pool)
		if err != nil {
			return staticpod.Image{}, fmt.Errorf("--pool: %w", err)
		}
		if in.Pool, in.PoolAnnotations, err = staticpod.Pool(data); err != nil {
			return staticpod.Image{}, fmt.Errorf("--pool %s: %w", f.pool, err)
		}
	}
	if f.sharedIngress {
		in.Env, in.Default = getenv(staticpod.SharedIngressEnv), staticpod.DefaultSharedIngressImage
	} else if f.release != "" {
		data, err := os.ReadFile(f.release)
		if err != nil {
			return staticpod.Image{}, fmt.Errorf("--release-images: %w", err)
		}
		if in.Release, err = staticpod.ReleaseImages(data); err != nil {
			return staticpod.Image{}, fmt.Errorf("--release-images %s: %w", f.release, err)
		}
	}
	return staticpod.ResolveImage(in)
}

// apiservers validates the apiserver flags and finds the servers: the
// bootstrap list, or with --kubeconfig what the sources yield now. The
// returned Sources hold the servers chosen in Static.
func (f *staticPodFlags) apiservers(stderr io.Writer) (apiserverlb.Shape, staticpod.Sources, error) {
	var src staticpod.Sources
	if f.listen == "" {
		return apiserverlb.Shape{}, src, flagErr("--listen: give the node-local IP:PORT, e.g. 172.20.0.1:6443")
	}
	shape, err := apiserverlb.NewShape([]string{f.listen}, apiserverlb.CheckOptions{
		Inter: apiserverlb.DefaultInter, Rise: apiserverlb.DefaultRise, Fall: apiserverlb.DefaultFall,
		CAFile: f.caFile, InsecureSkipVerify: f.insecure, ClientCertPEM: f.pem})
	if err != nil {
		return shape, src, err
	}
	if f.caFile == "" && !f.insecure {
		fmt.Fprintln(stderr, "warning: no --apiserver-ca-file: health checks are TCP connects, not GET /readyz (give the apiservers' CA file on the node, or --apiserver-check-insecure-skip-verify)")
	}
	if f.port < 1 || f.port > 65535 {
		return shape, src, flagErr("--apiserver-port: %d out of range", f.port)
	}
	src.Port = uint16(f.port)
	if src.Order, err = apiserverlb.ParseSources(f.sources); err != nil {
		return shape, src, flagErr("--apiserver-sources: %v", err)
	}
	if src.Static, err = apiserverlb.ParseServers(strings.ReplaceAll(f.bootstrap, ",", "\n"), src.Port); err != nil {
		return shape, src, flagErr("--bootstrap-servers: %v", err)
	}
	if f.configMap != "" {
		ns, name, ok := strings.Cut(f.configMap, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return shape, src, flagErr("--apiserver-configmap: want NAMESPACE/NAME, got %q", f.configMap)
		}
		src.ConfigMapNamespace, src.ConfigMapName = ns, name
	} else if slices.Contains(src.Order, apiserverlb.SourceConfigMap) {
		return shape, src, flagErr("--apiserver-sources has configmap: give --apiserver-configmap NAMESPACE/NAME")
	}
	if f.kubeconfig == "" {
		if len(src.Static) == 0 {
			return shape, src, flagErr("--bootstrap-servers: at least one apiserver is needed (or --kubeconfig to read them from the cluster)")
		}
		return shape, src, nil
	}
	cfg, err := kubeclient.Config(kubeclient.Options{Kubeconfig: f.kubeconfig})
	if err != nil {
		return shape, src, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return shape, src, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	choice, err := staticpod.Discover(ctx, client, src)
	if err != nil {
		return shape, src, err
	}
	fmt.Fprintf(stderr, "apiservers %s (from source %s)\n", strings.Join(apiserverlb.FormatServers(choice.Servers), ","), choice.Source)
	src.Static = choice.Servers
	return shape, src, nil
}

// runArgs are the arguments of the live variant's controller: the
// apiserver mode with this pod's sockets, the servers rendered as its
// static source, and the same health checks.
func (f *staticPodFlags) runArgs(src staticpod.Sources, run staticpod.RunDir) []string {
	args := []string{
		"run", "--mode=apiserver",
		"--kubeconfig=" + f.liveKubeconfig,
		"--haproxy-config=" + run.Config(),
		"--master-socket=" + run.MasterSocket(),
		"--stats-socket=" + run.StatsSocket(),
		"--state-file=" + run.StateFile(),
		"--monitor-address=" + f.monitor.String(),
		"--listen=" + f.listen,
		"--apiserver-sources=" + strings.Join(src.Order, ","),
		"--bootstrap-servers=" + strings.Join(apiserverlb.FormatServers(src.Static), ","),
		"--apiserver-port=" + strconv.Itoa(int(src.Port)),
		"--apiserver-state-file=" + path.Join(f.stateDir, "apiservers.json"),
		// Explicit: the pod is on the host network, where run's default
		// (:9742, every address) is the Services controller's.
		"--metrics-address=" + f.metricsAddr,
	}
	if src.ConfigMapName != "" {
		args = append(args, "--apiserver-configmap="+src.ConfigMapNamespace+"/"+src.ConfigMapName)
	}
	if f.caFile != "" {
		args = append(args, "--apiserver-ca-file="+f.caFile)
	}
	if f.insecure {
		args = append(args, "--apiserver-check-insecure-skip-verify")
	}
	if f.pem != "" {
		// The same file the seed config names: the controller's configs
		// name it too, so taking the seed over needs no reload.
		args = append(args, "--apiserver-check-pem="+f.pem)
	}
	return args
}
