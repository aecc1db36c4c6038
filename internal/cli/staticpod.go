package cli

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/model"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/staticpod"
)

type staticPodFlags struct {
	listen, bootstrap   string
	monitor             netip.AddrPort
	out, configDir      string
	pool, release, comp string
	sharedIngress, live bool
	syncImage           string
	liveKubeconfig      string
	stateDir            string
}

// staticPodCmd is `render static-pod`: the node-local kube-apiserver proxy
// as a static pod manifest and its haproxy.cfg.
func staticPodCmd(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("render static-pod", stderr)
	var f staticPodFlags
	f.monitor = netip.MustParseAddrPort("127.0.0.1:9444")
	fs.StringVar(&f.listen, "listen", "", "node-local IP:PORT HAProxy listens on for the apiservers, e.g. 172.20.0.1:6443 (required)")
	fs.StringVar(&f.bootstrap, "bootstrap-servers", "", "apiservers IP:PORT,... (required)")
	fs.TextVar(&f.monitor, "monitor-address", f.monitor, "IP:PORT of HAProxy's monitor-uri /healthz, the liveness probe's target")
	fs.StringVar(&f.out, "o", "", "write "+staticpod.ManifestFile+" and "+staticpod.ConfigFile+" into this directory (default: the manifest to stdout)")
	fs.StringVar(&f.configDir, "config-dir", "/etc/kubernetes/kube-apiserver-proxy", "directory of haproxy.cfg on the node, mounted read-only into the pod")
	fs.StringVar(&f.pool, "pool", "", "node-pool object (YAML or JSON) whose annotations "+staticpod.ImageAnnotation+" or "+staticpod.HyperShiftImageAnnotation+" choose the HAProxy image")
	fs.BoolVar(&f.sharedIngress, "shared-ingress", false, "below the annotations, take $"+staticpod.SharedIngressEnv+", then the built-in "+staticpod.DefaultSharedIngressImage+" (instead of the release payload)")
	fs.StringVar(&f.release, "release-images", "", "YAML map of release payload component to image (without --shared-ingress)")
	fs.StringVar(&f.comp, "release-component", staticpod.DefaultReleaseComponent, "component of --release-images holding the HAProxy image")
	fs.BoolVar(&f.live, "live", false, "add a haproxy-k8s-sync container (run --mode=apiserver) that keeps HAProxy's servers in sync with the cluster, with no new manifest")
	fs.StringVar(&f.syncImage, "sync-image", "haproxy-k8s-sync:"+Version, "with --live: the haproxy-k8s-sync image")
	fs.StringVar(&f.liveKubeconfig, "live-kubeconfig", "", "with --live: kubeconfig file on the node for the controller (RBAC of run --mode=apiserver)")
	fs.StringVar(&f.stateDir, "state-dir", "/var/lib/haproxy-k8s-sync/kube-apiserver-proxy", "with --live: node directory where the controller keeps the last apiserver list across restarts")
	var env shape // no shape flags here: only for the environment variables of the flags
	if err := parse(fs, args, getenv, &env); err != nil {
		return err
	}
	img, err := f.image(getenv)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "haproxy image %s (from %s)\n", img.Ref, img.Source)

	listen, servers, err := f.endpoints()
	if err != nil {
		return err
	}
	cfg := staticpod.Config(proxyModel(listen, servers), f.monitor, f.live)
	opts := staticpod.Options{Image: img, Config: cfg, ConfigDir: f.configDir, Listen: listen, Monitor: f.monitor}
	if f.live {
		if f.liveKubeconfig == "" {
			return errors.New("--live needs --live-kubeconfig: the controller's kubeconfig on the node")
		}
		opts.Live = &staticpod.Live{Image: f.syncImage, Kubeconfig: f.liveKubeconfig, StateDir: f.stateDir, Args: f.runArgs(listen, servers)}
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
	if err := writeAtomic(filepath.Join(f.out, staticpod.ConfigFile), cfg); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(f.out, staticpod.ManifestFile), manifest)
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

func (f *staticPodFlags) endpoints() (netip.AddrPort, []netip.AddrPort, error) {
	listen, err := netip.ParseAddrPort(f.listen)
	if err != nil || listen.Port() == 0 {
		return listen, nil, fmt.Errorf("--listen %q: want the node-local IP:PORT, e.g. 172.20.0.1:6443", f.listen)
	}
	var servers []netip.AddrPort
	for _, s := range strings.Split(f.bootstrap, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		ap, err := netip.ParseAddrPort(s)
		if err != nil || ap.Port() == 0 {
			return listen, nil, fmt.Errorf("--bootstrap-servers: %q: want IP:PORT", s)
		}
		servers = append(servers, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
	}
	if len(servers) == 0 {
		return listen, nil, errors.New("--bootstrap-servers: at least one apiserver IP:PORT is needed")
	}
	return netip.AddrPortFrom(listen.Addr().Unmap(), listen.Port()), servers, nil
}

// runArgs are the arguments of the live variant's controller.
func (f *staticPodFlags) runArgs(listen netip.AddrPort, servers []netip.AddrPort) []string {
	list := make([]string, len(servers))
	for i, s := range servers {
		list[i] = s.String()
	}
	return []string{
		"run", "--mode=apiserver",
		"--kubeconfig=" + f.liveKubeconfig,
		"--haproxy-config=" + staticpod.LiveConfig,
		"--master-socket=" + staticpod.MasterSocket,
		"--stats-socket=" + staticpod.StatsSocket,
		"--state-file=" + staticpod.StateFile,
		"--monitor-address=" + f.monitor.String(),
		"--listen=" + listen.String(),
		"--bootstrap-servers=" + strings.Join(list, ","),
		"--apiserver-state-file=" + staticpod.LiveStateDir + "/apiservers",
	}
}

// proxyModel is one TCP frontend on listen and one backend with the
// apiservers, health-checked by TCP connect.
func proxyModel(listen netip.AddrPort, servers []netip.AddrPort) model.Config {
	be := model.Backend{
		Name: "apiserver", Service: "kube-apiserver", Balance: "roundrobin",
		Check:          model.Check{Enabled: true, Inter: time.Second, Rise: 2, Fall: 2},
		TimeoutConnect: 3 * time.Second, TimeoutServer: time.Hour,
	}
	for _, s := range servers {
		be.Servers = append(be.Servers, model.Server{Addr: s.Addr(), Port: s.Port()})
	}
	return model.Config{
		Frontends: []model.Frontend{{Name: "apiserver", Service: "kube-apiserver",
			Binds: []model.Bind{{Addr: listen.Addr(), Port: listen.Port()}}, TimeoutClient: time.Hour, Backend: "apiserver"}},
		Backends: []model.Backend{be},
	}
}

// writeAtomic writes data to a temporary file beside path and renames it.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
