// Package nodes runs, for tests, a tier of real Kubernetes nodes: each a
// network namespace of its own with its own containerd (Debian's, with
// runc), a real kubelet and a real kube-proxy in nftables mode (both built
// by hack/testbin.sh from the apiserver's k8s.io/kubernetes version), Pods
// on a CNI bridge with host-local addresses from a per-node Pod CIDR, and
// routes between the nodes. The nodes sit on a bridge in an underlay
// namespace, beside a load-balancer namespace for HAProxy. The apiserver
// (kubeapi, with kube-controller-manager and without kwok) listens on the
// test's loopback and is reached from the namespaces through a forwarder at
// UnderlayGateway:APIPort.
//
// Nothing touches the host's interfaces, nftables ruleset, sysctls or
// cgroups: each node's daemons share a mount namespace of their own (held
// by a holder process) with fresh tmpfs on /run, /var/lib and /var/log and
// the kernel settings kubelet insists on shadowed by files
// (protectKernelDefaults), and its Pods' cgroups live below the test
// process's own cgroup. Cleanup stops everything by PID, removes the
// cgroups and the namespaces, also after a failed test; mounts go with
// the mount namespaces.
//
// Images are never pulled: hack/testbin.sh packages agnhost as
// AgnhostImage and PauseImage (the sandbox, containerd's sandbox_image),
// imported into every node's containerd. Manifests use imagePullPolicy
// Never.
package nodes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/proc"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
)

// The images every node holds (hack/image/testimage names them so).
const (
	AgnhostImage = "testimages.invalid/agnhost:1"
	PauseImage   = "testimages.invalid/pause:1"
	// ControllerImage is the chart's image (the controller over HAProxy's
	// root file system), in the archive "controller-images.tar"
	// (Options.Images), which hack/testbin.sh builds on request.
	ControllerImage = "testimages.invalid/haproxy-k8s-sync:1"
)

// KubeProxyHealthPort is where kube-proxy answers /healthz on every node
// address.
const KubeProxyHealthPort = 10256

const (
	pollEvery   = 50 * time.Millisecond
	killWait    = 10 * time.Second
	daemonReady = 60 * time.Second  // containerd socket, kube-proxy healthz
	nodeReady   = 180 * time.Second // kubelet registered and Ready (a busy 2-core machine)
	stopGrace   = 10 * time.Second
)

// Options change the tier. The zero value is the default.
type Options struct {
	// Nodes is the number of real nodes (default 2).
	Nodes int
	// ControllerManagerArgs are extra kube-controller-manager flags.
	ControllerManagerArgs []string
	// Images are more image archives of the testbin directory (e.g.
	// "conformance-images.tar"), or absolute paths of archives built
	// elsewhere, every node imports besides test-images.tar.
	Images []string
	// InCluster lets Pods reach the apiserver as on a cluster, through
	// default/kubernetes with their service-account token (incluster.go):
	// for a chart's workload running in the tier. Off by default: it turns
	// the ServiceAccount admission plugin on, which rejects a Pod created
	// before its namespace's default ServiceAccount exists.
	InCluster bool
}

// Tier is a running set of real nodes with their apiserver.
type Tier struct {
	Kube   *kubeapi.Server
	Client kubernetes.Interface
	// Namespaces: the underlay (the bridge), the load balancer's and a
	// client's (at ClientAddr, on the underlay).
	Underlay, LB, ClientNS string
	Nodes                  []*Node

	dir     string
	prefix  string
	bins    string
	cg      *cgroups
	fwd     *forward
	nodeCfg string   // kubeconfig the nodes use
	images  []string // extra image archives (Options.Images)

	mu       sync.Mutex
	cleanups []func() error
}

var seq atomic.Int32

// Start builds the tier and waits until every node is Ready, or fails the
// test saying why (a machine that cannot run containers fails here, it is
// not skipped). Everything is undone when the test ends.
func Start(t testing.TB, opts Options) *Tier {
	t.Helper()
	begin := time.Now()
	if opts.Nodes == 0 {
		opts.Nodes = 2
	}
	if err := Preflight(); err != nil {
		t.Fatalf("nodes: this machine cannot run the real-node tier: %v", err)
	}
	if err := sweepStale(); err != nil {
		t.Logf("nodes: %v", err)
	}
	bins, err := kubeapi.BinDir()
	if err != nil {
		t.Fatalf("nodes: %v", err)
	}
	for _, b := range append([]string{"kubelet", "kube-proxy", "test-images.tar"}, opts.Images...) {
		if _, err := os.Stat(binPath(bins, b)); err != nil {
			t.Fatalf("nodes: %s missing in %s (hack/testbin.sh builds it; HKS_TESTBIN_DIR names an older set?): %v", b, bins, err)
		}
	}
	ko := kubeapi.Options{
		Controllers: true, NoKwok: true,
		APIServerArgs:         []string{"--service-cluster-ip-range=" + ServiceCIDR},
		ControllerManagerArgs: opts.ControllerManagerArgs,
	}
	if opts.InCluster {
		inClusterOptions(&ko, opts.ControllerManagerArgs)
	}
	kube := kubeapi.StartWithOptions(t, ko)
	p := fmt.Sprintf("hkn%d-%d-", os.Getpid()%100000, seq.Add(1))
	tr := &Tier{Kube: kube, Client: kube.Client(t), Underlay: p + "u", LB: p + "lb", ClientNS: p + "c",
		dir: t.TempDir(), prefix: p, bins: bins, images: opts.Images}
	t.Cleanup(func() {
		if err := tr.stop(); err != nil {
			t.Errorf("nodes: cleanup: %v", err)
		}
	})
	if err := tr.start(opts); err != nil {
		t.Log(tr.LogTail(40))
		t.Fatalf("nodes: %v", err)
	}
	t.Logf("nodes: %d real nodes Ready in %v", len(tr.Nodes), time.Since(begin).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(tr.LogTail(40))
		}
	})
	return tr
}

func (t *Tier) start(opts Options) error {
	var err error
	if t.cg, err = newCgroups(t.prefix + "cg"); err != nil {
		return err
	}
	t.cleanup(t.cg.remove)
	if err := t.buildNetwork(opts.Nodes); err != nil {
		return err
	}
	target := t.Kube.URL[len("https://"):]
	if t.fwd, err = startForward(t.Underlay, UnderlayGateway+":"+strconv.Itoa(APIPort), target); err != nil {
		return fmt.Errorf("apiserver forwarder: %w", err)
	}
	t.cleanup(t.fwd.close)
	if err := t.writeNodeKubeconfig(); err != nil {
		return err
	}
	if opts.InCluster {
		if err := t.publishAPIServer(); err != nil {
			return err
		}
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			t.bindDaemonPods(stop)
		}()
		t.cleanup(func() error {
			close(stop)
			<-done
			return nil
		})
	}
	errs := make([]error, len(t.Nodes))
	var wg sync.WaitGroup
	for i, n := range t.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = n.start(); errs[i] != nil {
				errs[i] = fmt.Errorf("node %s: %w", n.Name, errs[i])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return t.waitReady(nodeReady)
}

// waitReady waits until every node is Ready in the API.
func (t *Tier) waitReady(timeout time.Duration) error {
	return waitFor(timeout, nil, func() error {
		for _, n := range t.Nodes {
			if err := n.exitedDaemon(); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			node, err := t.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			cancel()
			if err != nil {
				return err
			}
			if !IsReady(node) {
				return fmt.Errorf("node %s not Ready", n.Name)
			}
		}
		return nil
	})
}

// IsReady reports the Node's Ready condition.
func IsReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// cleanup registers an undo step; stop runs them in reverse order.
func (t *Tier) cleanup(f func() error) {
	t.mu.Lock()
	t.cleanups = append(t.cleanups, f)
	t.mu.Unlock()
}

// stop undoes everything: the nodes' processes, the forwarder, the
// namespaces, the cgroups (in reverse order of making).
func (t *Tier) stop() error {
	t.mu.Lock()
	steps := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	var errs []error
	for i := len(steps) - 1; i >= 0; i-- {
		if err := steps[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// daemons are the processes every node runs, each with a log of its own.
var daemons = []string{"containerd", "kubelet", "kube-proxy"}

// LogTail returns the last n lines of every node daemon's log.
func (t *Tier) LogTail(n int) string {
	var out string
	for _, nd := range t.Nodes {
		for _, name := range daemons {
			out += fmt.Sprintf("--- last %d lines of %s's %s ---\n%s", n, nd.Name, name, proc.Tail(nd.logPath(name), n))
		}
	}
	return out
}

// LogMark is where each node daemon's log ended when MarkLogs was called.
type LogMark map[string]int64

// MarkLogs notes where every node daemon's log ends now, for LogsSince.
func (t *Tier) MarkLogs() LogMark {
	m := LogMark{}
	for _, nd := range t.Nodes {
		for _, name := range daemons {
			m[nd.logPath(name)] = proc.Size(nd.logPath(name))
		}
	}
	return m
}

// LogsSince returns what the named daemons (e.g. "kube-proxy") of every
// node logged since m, at most the last n lines of each: a failed step's
// logs without the tier's start-up before them.
func (t *Tier) LogsSince(m LogMark, n int, daemons ...string) string {
	var out string
	for _, nd := range t.Nodes {
		for _, name := range daemons {
			out += fmt.Sprintf("--- %s's %s since the mark (last %d lines) ---\n%s", nd.Name, name, n, proc.TailFrom(nd.logPath(name), m[nd.logPath(name)], n))
		}
	}
	return out
}

// Node returns the node called name, or nil.
func (t *Tier) Node(name string) *Node {
	for _, n := range t.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// binPath is name in the testbin directory bins, or name itself when it
// is absolute (Options.Images built outside hack/testbin.sh).
func binPath(bins, name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(bins, name)
}
