package nodes

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/proc"

	"github.com/vishvananda/netns"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/netnsrun"
)

// Node is one real node.
type Node struct {
	Name    string // n1, n2, ...
	NS      string // its network namespace
	Addr    string // InternalIP, on the underlay
	PodCIDR string

	index int
	tier  *Tier
	dir   string

	mu                             sync.Mutex
	holder                         *proc.Process
	containerd, kubelet, kubeProxy *proc.Process
}

func (n *Node) logPath(name string) string { return filepath.Join(n.dir, name+".log") }
func (n *Node) socket() string             { return filepath.Join(n.dir, "containerd.sock") }
func (n *Node) cgroupRoot() string         { return filepath.Join(n.tier.cg.root, n.Name) }

// The kernel settings kubelet checks (protectKernelDefaults: it fails
// instead of writing them, as it would on the host); the holder shadows
// the real files with these, in the node's mount namespace only.
var kernelDefaults = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

// holderScript runs in the node's new mount namespace (and its network
// namespace) before it sleeps: the mounts die with the namespace.
const holderScript = `set -e
mount -t tmpfs -o mode=0755 hks-run /run
mount -t tmpfs -o mode=0755 hks-varlib /var/lib
mount -t tmpfs -o mode=0755 hks-varlog /var/log
for f in %s; do mount --bind "%s/sysctl/$f" "/proc/sys/$f"; done
touch %s
exec sleep infinity
`

func (n *Node) start() error {
	n.dir = filepath.Join(n.tier.dir, n.Name)
	for _, d := range []string{"sysctl/vm", "sysctl/kernel/keys", "cni", "ipam", "kubelet", "pod-logs", "containerd/root", "containerd/state", "containerd/opt", "volume-plugins"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o700); err != nil {
			return err
		}
	}
	var names []string
	for k, v := range kernelDefaults {
		names = append(names, k)
		if err := os.WriteFile(filepath.Join(n.dir, "sysctl", k), []byte(v+"\n"), 0o644); err != nil {
			return err
		}
	}
	for _, m := range n.tier.cg.mounts {
		if err := n.tier.cg.mkdirAll(m, n.cgroupRoot()); err != nil {
			return err
		}
	}
	ready := filepath.Join(n.dir, "holder.ready")
	script := fmt.Sprintf(holderScript, strings.Join(names, " "), n.dir, ready)
	var err error
	n.holder, err = startProc("holder", n.logPath("holder"), "nsenter", "--net=/run/netns/"+n.NS, "--",
		"unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script)
	if err != nil {
		return err
	}
	n.tier.cleanup(n.stopAll)
	if err := waitFor(daemonReady, n.holder, func() error { _, err := os.Stat(ready); return err }); err != nil {
		return fmt.Errorf("holder: %w", err)
	}
	if err := n.writeConfigs(); err != nil {
		return err
	}
	if err := n.startContainerd(); err != nil {
		return err
	}
	if err := n.importImages(); err != nil {
		return err
	}
	if err := n.StartKubelet(); err != nil {
		return err
	}
	return n.StartKubeProxy()
}

func (n *Node) startContainerd() error {
	p, err := n.startIn("containerd", "containerd", "--config", filepath.Join(n.dir, "containerd.toml"), "--log-level", "info")
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.containerd = p
	n.mu.Unlock()
	return waitFor(daemonReady, p, func() error {
		c, err := net.DialTimeout("unix", n.socket(), time.Second)
		if err != nil {
			return err
		}
		c.Close()
		return n.ctr("version")
	})
}

// ctr runs `ctr -n k8s.io` against the node's containerd.
func (n *Node) ctr(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", n.socket(), "--namespace", "k8s.io"}, args...)...)
	cmd.Env = pathEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (n *Node) importImages() error {
	for _, name := range append([]string{"test-images.tar"}, n.tier.images...) {
		tar, err := filepath.EvalSymlinks(binPath(n.tier.bins, name))
		if err != nil {
			return err
		}
		if err := n.ctr("images", "import", tar); err != nil {
			return err
		}
	}
	for _, img := range []string{AgnhostImage, PauseImage} {
		if err := n.ctr("images", "check", "name=="+img); err != nil {
			return err
		}
	}
	return nil
}

// StartKubelet starts (or restarts) the node's kubelet.
func (n *Node) StartKubelet() error {
	p, err := n.startIn("kubelet", filepath.Join(n.tier.bins, "kubelet"),
		"--config="+filepath.Join(n.dir, "kubelet.yaml"),
		"--kubeconfig="+n.tier.nodeCfg,
		"--root-dir="+filepath.Join(n.dir, "kubelet"),
		"--hostname-override="+n.Name,
		"--node-ip="+n.Addr,
		"--v=2")
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.kubelet = p
	n.mu.Unlock()
	return nil
}

// StopKubelet stops the node's kubelet (its Pods keep running).
func (n *Node) StopKubelet() { n.mu.Lock(); p := n.kubelet; n.mu.Unlock(); p.Stop(stopGrace) }

// StartKubeProxy starts (or restarts) the node's kube-proxy and waits
// until its /healthz answers 200.
func (n *Node) StartKubeProxy() error {
	p, err := n.startIn("kube-proxy", filepath.Join(n.tier.bins, "kube-proxy"),
		"--config="+filepath.Join(n.dir, "kube-proxy.yaml"), "--v=2")
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.kubeProxy = p
	n.mu.Unlock()
	return waitFor(nodeReady, p, func() error {
		code, err := n.KubeProxyHealth()
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("kube-proxy /healthz: %d", code)
		}
		return nil
	})
}

// StopKubeProxy stops the node's kube-proxy (its rules stay).
func (n *Node) StopKubeProxy() { n.mu.Lock(); p := n.kubeProxy; n.mu.Unlock(); p.Stop(stopGrace) }

// KillContainerd sends SIGKILL to the node's containerd (its shims, and
// so the Pods' containers, keep running).
func (n *Node) KillContainerd() { n.mu.Lock(); p := n.containerd; n.mu.Unlock(); p.Kill() }

// StartContainerd starts the node's containerd again (after
// KillContainerd) and waits until it answers.
func (n *Node) StartContainerd() error { return n.startContainerd() }

// KubeProxyHealth asks kube-proxy's /healthz on the node's address, from
// the load balancer's namespace, as HAProxy does.
func (n *Node) KubeProxyHealth() (int, error) {
	return n.tier.HTTPGet(fmt.Sprintf("http://%s:%d/healthz", n.Addr, KubeProxyHealthPort))
}

// HTTPGet sends one GET from the load balancer's namespace and returns
// the status code. The connection is dialled on the calling thread, which
// InLB keeps in the namespace (an http.Client would dial on another
// thread, in the test's own namespace).
func (t *Tier) HTTPGet(url string) (int, error) {
	code, _, err := t.HTTPGetBody(url)
	return code, err
}

// HTTPGetBody is HTTPGet that also returns the body (at most 4 kB), as
// kube-proxy's health answers carry their reason there.
func (t *Tier) HTTPGetBody(url string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	req.Close = true
	var code int
	var body []byte
	err = t.InLB(func() error {
		c, err := net.DialTimeout("tcp", req.URL.Host, 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if err := req.Write(c); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		code = resp.StatusCode
		body, err = io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return err
	})
	return code, string(body), err
}

// InLB runs fn on a thread in the load balancer's namespace: sockets
// opened there stay in it.
func (t *Tier) InLB(fn func() error) error { return InNS(t.LB, fn) }

// InNS runs fn on a thread in network namespace ns.
func InNS(ns string, fn func() error) error {
	h, err := netns.GetFromName(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	return netnsrun.Do(h, fn)
}

// NSPath is the file of a network namespace.
func NSPath(ns string) string { return "/run/netns/" + ns }

// exitedDaemon reports a daemon of the node that died.
func (n *Node) exitedDaemon() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range []*proc.Process{n.holder, n.containerd, n.kubelet} {
		if p != nil && p.Exited() {
			return fmt.Errorf("node %s: %s exited (%v)\n--- last lines of %s ---\n%s", n.Name, p.Name, p.Err(), p.LogPath, p.Tail(40))
		}
	}
	return nil
}

// stopAll ends every process of the node: kubelet and kube-proxy, then
// the containers (in the node's cgroups), then whatever else lives in the
// node's mount namespace (containerd, its shims, the holder). Mounts go
// with the namespace.
func (n *Node) stopAll() error {
	n.mu.Lock()
	kubelet, kubeProxy, containerd, holder := n.kubelet, n.kubeProxy, n.containerd, n.holder
	n.mu.Unlock()
	kubelet.Kill()
	kubeProxy.Kill()
	for _, pid := range pidsUnder(n.tier.cg, n.cgroupRoot()) {
		killPID(pid)
	}
	if holder != nil && !holder.Exited() {
		for _, pid := range sameMountNS(holder.Pid()) {
			killPID(pid)
		}
	}
	containerd.Kill()
	holder.Kill()
	if holder != nil && !holder.Exited() {
		return fmt.Errorf("node %s: holder %d did not exit", n.Name, holder.Pid())
	}
	return nil
}

// pidsUnder lists the processes in the cgroup path below every hierarchy.
func pidsUnder(c *cgroups, path string) []int {
	sub := &cgroups{mounts: c.mounts, root: path}
	return sub.pids()
}

// sameMountNS lists the processes (but pid itself) that share pid's mount
// namespace.
func sameMountNS(pid int) []int {
	want, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/mnt")
	if err != nil {
		return nil
	}
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == pid {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/mnt"); err == nil && l == want {
			out = append(out, p)
		}
	}
	return out
}
