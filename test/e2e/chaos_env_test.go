package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/nodes"
)

// The chaos harness (issue 23): the real-node tier with one LoadBalancer
// Service (web, Cluster policy, port 8001) in front of agnhost Pods on
// both nodes, the controller as a separate process (so that kill -9 is
// real) reaching the apiserver through a proxy the test can cut, and
// HAProxy in the load balancer's namespace, restarted by the test as its
// supervisor would.

const (
	chaosPort      = 8001
	chaosPublish   = "192.0.2.10"
	chaosLBClass   = "haproxy-k8s-sync.io/lb"
	chaosConverge  = 60 * time.Second // deadline for the truth to come back
	chaosNodeGrace = 6 * time.Second  // node-lifecycle grace period here
)

type chaosEnv struct {
	*realNodeEnv
	bin   string
	proxy *apiProxy
	addr  string

	taken net.Listener // a port taken behind our back (reload-fails-port-taken)

	mu      sync.Mutex
	ctl     *exec.Cmd
	ctlDone chan struct{}
	ctlLog  *haproxytest.LockedBuffer
}

func newChaosEnv(t *testing.T) *chaosEnv {
	t.Helper()
	bin := controllerBinary(t)
	r := newChaosRealNodeEnv(t, nodes.Options{ControllerManagerArgs: []string{
		"--controllers=" + strings.Join(append(kubeapi.Controllers, "node-lifecycle-controller"), ","),
		"--node-monitor-grace-period=" + chaosNodeGrace.String(), "--node-monitor-period=1s",
		// The burst of 500 Services: their EndpointSlices at the default
		// 20 writes/s would take 25 s, which the table would charge to us.
		"--kube-api-qps=200", "--kube-api-burst=400",
	}})
	proxy, err := newAPIProxy(r.tier.LB, strings.TrimPrefix(r.kube.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.close)
	c := &chaosEnv{realNodeEnv: r, bin: bin, proxy: proxy, addr: r.serviceAddr(chaosPort)}
	for _, n := range r.tier.Nodes {
		r.createDeployment(webApp("web-"+n.Name, "web", n.Name, 1))
	}
	svc := webService("web", "web", chaosPort, corev1.ServiceExternalTrafficPolicyCluster)
	svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	class := chaosLBClass
	svc.Spec.LoadBalancerClass = &class
	r.createService(svc)
	r.waitRolledOut(c.deps()...)
	c.startController()
	t.Cleanup(c.killController)
	r.eventuallyWithin(chaosConverge, "the cluster's truth at start", c.truth())
	return c
}

// chaosStateSize is the size of the tmpfs that holds the state
// directory (haproxy.cfg, the server state file, the last-good settings,
// the sockets): small, so that a filler fills it.
const chaosStateSize = "4m"

// newChaosRealNodeEnv is newRealNodeEnvWith with the state directory on
// a tmpfs of its own (mounted on the test's temporary directory, lazily
// unmounted after HAProxy and the controller are gone), which the disk
// faults fill or make read-only.
func newChaosRealNodeEnv(t *testing.T, opts nodes.Options) *realNodeEnv {
	t.Helper()
	dir := t.TempDir()
	if out, err := execOut("mount", "-t", "tmpfs", "-o", "size="+chaosStateSize+",mode=0700", "hks-chaos-state", dir); err != nil {
		t.Fatalf("tmpfs for the state directory: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := execOut("umount", "-l", dir); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return newRealNodeEnvIn(t, opts, dir)
}

// log is the controller's output so far (of its current process).
func (c *chaosEnv) log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ctlLog.String()
}

// controllerSaid reports nil once the controller's log holds sub.
func (c *chaosEnv) controllerSaid(sub string) func() error {
	return func() error {
		c.mu.Lock()
		log := c.ctlLog
		c.mu.Unlock()
		if !strings.Contains(log.String(), sub) {
			return fmt.Errorf("the controller did not log %q", sub)
		}
		return nil
	}
}

func (c *chaosEnv) deps() []string {
	var out []string
	for _, n := range c.tier.Nodes {
		out = append(out, "web-"+n.Name)
	}
	return out
}

// startController runs the controller binary against the proxy.
func (c *chaosEnv) startController() {
	c.t.Helper()
	args := append([]string{"run"}, c.controllerArgs(
		"--kubeconfig", "", "--api-server", "https://"+c.proxy.addr, "--token-file", c.kube.TokenPath, "--ca-file", c.kube.CAPath,
		"--publish-address", chaosPublish,
		"--node-check-interval", realCheckInter.String(), "--node-check-fall", fmt.Sprint(realCheckFall), "--node-check-rise", "1",
		"--default-check-interval", realCheckInter.String(), "--default-fall", fmt.Sprint(realCheckFall), "--default-rise", "1",
	)...)
	log := &haproxytest.LockedBuffer{}
	// In the load balancer's namespace, beside HAProxy, as a DaemonSet
	// on the host network would be: the ports it checks are HAProxy's.
	cmd := exec.Command("nsenter", append([]string{"--net=" + nodes.NSPath(c.tier.LB), "--", c.bin}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	c.mu.Lock()
	c.ctl, c.ctlDone, c.ctlLog = cmd, done, log
	c.mu.Unlock()
}

// killController sends SIGKILL to the controller and waits until it is gone.
func (c *chaosEnv) killController() {
	c.mu.Lock()
	cmd, done := c.ctl, c.ctlDone
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.t.Errorf("controller %d survives SIGKILL", cmd.Process.Pid)
	}
	if c.t.Failed() {
		c.t.Logf("controller log (tail):\n%s", tailString(c.ctlLog.String(), 60))
	}
}

func tailString(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// proc is HAProxy's master view, or a zero Proc when the master does not
// answer.
func (c *chaosEnv) proc() haproxy.Proc {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	p, _ := c.master.ShowProc(ctx)
	return p
}

// supervise plays systemd: once HAProxy's master is gone (or, after a
// worker was killed, lists no worker), the whole unit is stopped and
// started again with the same files. It reports whether it restarted.
func (c *chaosEnv) supervise(within time.Duration) bool {
	c.t.Helper()
	var restart bool
	_ = waitUntil(within, func() error {
		if pid := c.hap.MasterPID(); pid == 0 || syscall.Kill(pid, 0) != nil || isZombie(pid) {
			restart = true
			return nil
		}
		if p := c.proc(); p.MasterPID != 0 && len(p.Workers) == 0 {
			restart = true
			return nil
		}
		return fmt.Errorf("running")
	})
	if restart {
		c.hap.Restart(c.t)
	}
	return restart
}

func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// truth reports nil once HAProxy serves what the cluster says: every
// Ready node's server UP in web's backend, new connections reaching the
// Pods on every node, and each extra check.
func (c *chaosEnv) truth(extra ...func() error) func() error {
	return func() error {
		if err := c.nodesUp(); err != nil {
			return err
		}
		if err := c.servedBy(c.addr, c.deps()...)(); err != nil {
			return err
		}
		for _, f := range extra {
			if err := f(); err != nil {
				return err
			}
		}
		return nil
	}
}

// nodesUp reports nil when every node's address is an UP server of the
// backend behind chaosPort. "no check" counts as up: a server that came
// back into a slot not bound to its node (a reload happened while the
// backend was empty) follows its node through the controller until the
// next reload binds it (architecture.md, "Nodes as servers"); such a slot
// carries the node check itself (UP), or none with --node-check=none.
func (c *chaosEnv) nodesUp() error {
	rows, err := c.stat()
	if err != nil {
		return err
	}
	for _, n := range c.tier.Nodes {
		ok := false
		for _, r := range rows {
			if c.isWeb(r.Proxy) && r.Addr == n.Addr && (r.Status == "UP" || r.Status == "no check") {
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("node %s (%s) not UP in the backend of %d", n.Name, n.Addr, chaosPort)
		}
	}
	return nil
}

// nodeDown reports nil when the node's server of chaosPort is not UP.
func (c *chaosEnv) nodeDown(n *nodes.Node) func() error {
	return func() error {
		rows, err := c.stat()
		if err != nil {
			return err
		}
		for _, r := range rows {
			if c.isWeb(r.Proxy) && r.Addr == n.Addr && strings.HasPrefix(r.Status, "UP") {
				return fmt.Errorf("node %s still %s", n.Name, r.Status)
			}
		}
		return nil
	}
}

// isWeb reports whether the HAProxy backend proxy serves web: its own
// (named with chaosPort), or the spare it occupies with a pool.
func (c *chaosEnv) isWeb(proxy string) bool {
	return strings.Contains(proxy, fmt.Sprint(chaosPort)) || proxy == c.haproxyBackend(fmt.Sprintf("be_%s_web_%d", ns, chaosPort))
}

func (c *chaosEnv) stat() ([]haproxy.StatRow, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	rt := haproxy.NewRuntime(c.hap.StatsSocket) // a fresh one: HAProxy may have restarted
	defer rt.Close()
	out, err := rt.Exec(ctx, []string{"show stat"})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("show stat: no answer")
	}
	return haproxy.ParseStat(out[0], "addr")
}

// lostOrWrong checks what must survive every fault: haproxy.cfg valid
// and serving web, the server state file and the last-good settings
// present and readable, web's LoadBalancer status. It returns what is
// wrong, or "".
func (c *chaosEnv) lostOrWrong() string {
	var bad []string
	_, err := os.Stat(c.cfgPath)
	switch {
	case err != nil:
		bad = append(bad, "haproxy.cfg: "+err.Error())
	case c.inFiles(chaosPort)() != nil:
		bad = append(bad, "HAProxy's files do not serve the web port: "+c.inFiles(chaosPort)().Error())
	default:
		if out, err := exec.Command(haproxytest.Bin(), "-c", "-q", "-f", c.cfgPath).CombinedOutput(); err != nil {
			bad = append(bad, fmt.Sprintf("haproxy -c: %v: %s", err, out))
		}
	}
	state := filepath.Join(c.dir, "state")
	if b, err := os.ReadFile(state); err != nil {
		bad = append(bad, "server state file: "+err.Error())
	} else {
		for _, n := range c.tier.Nodes {
			if !strings.Contains(string(b), n.Addr) {
				bad = append(bad, "server state file: no server at "+n.Addr)
			}
		}
	}
	lg := filepath.Join(c.dir, "last-good-settings.json")
	if b, err := os.ReadFile(lg); err != nil {
		bad = append(bad, "last-good settings: "+err.Error())
	} else if !json.Valid(b) || !strings.Contains(string(b), ns+"/web") {
		bad = append(bad, "last-good settings: unreadable or without default/web")
	}
	if err := c.ingress("web", chaosPublish)(); err != nil {
		bad = append(bad, "status: "+err.Error())
	}
	return strings.Join(bad, "; ")
}

// apiProxy listens in the load balancer's namespace (where the
// controller runs; or on the test's loopback when netns is ""), forwards TCP to the apiserver on the test's loopback
// and can be cut (refusing new
// connections and cutting the open ones) and restored on the same port:
// the apiserver unreachable from the controller, while the cluster goes
// on.
type apiProxy struct {
	netns, addr, target string

	mu    sync.Mutex
	l     net.Listener
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func newAPIProxy(netns, target string) (*apiProxy, error) {
	var l net.Listener
	if err := inNS(netns, func() (err error) { l, err = net.Listen("tcp", "127.0.0.1:0"); return err }); err != nil {
		return nil, err
	}
	p := &apiProxy{netns: netns, addr: l.Addr().String(), target: target, conns: map[net.Conn]bool{}}
	p.serve(l)
	return p, nil
}

func (p *apiProxy) serve(l net.Listener) {
	p.mu.Lock()
	p.l = l
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
}

func (p *apiProxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add && p.l == nil {
		return false
	}
	if add {
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *apiProxy) pipe(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, true) || !p.track(up, true) {
		c.Close()
		up.Close()
		return
	}
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}
	go cp(up, c)
	go cp(c, up)
	<-done
	c.Close()
	up.Close()
	<-done
	p.track(c, false)
	p.track(up, false)
}

// cut closes the listener and every open connection.
func (p *apiProxy) cut() {
	p.mu.Lock()
	l := p.l
	p.l = nil
	conns := p.conns
	p.conns = map[net.Conn]bool{}
	p.mu.Unlock()
	if l != nil {
		l.Close()
	}
	for c := range conns {
		c.Close()
	}
	p.wg.Wait()
}

// restore listens again on the same address.
func (p *apiProxy) restore() error {
	var l net.Listener
	if err := inNS(p.netns, func() (err error) { l, err = net.Listen("tcp", p.addr); return err }); err != nil {
		return err
	}
	p.serve(l)
	return nil
}

func (p *apiProxy) close() { p.cut() }

// inNS runs fn in the test's network namespace netns, or where the test
// runs when netns is "" (loopback only).
func inNS(netns string, fn func() error) error {
	if netns == "" {
		return fn()
	}
	return nodes.InNS(netns, fn)
}

var (
	metaGet    = metav1.GetOptions{}
	metaDelete = metav1.DeleteOptions{}
)

func execOut(bin string, args ...string) ([]byte, error) {
	return exec.Command(bin, args...).CombinedOutput()
}

// chaosLoad is a steady load of new connections (sequential GET
// /hostname from the load balancer's namespace) that records when each
// failed attempt began: a node fault's failures are judged against the
// moment HAProxy's checks saw the node down.
type chaosLoad struct {
	stopc, done chan struct{}
	mu          sync.Mutex
	total       int
	failed      []loadFailure
}

type loadFailure struct {
	at  time.Time // when the attempt began
	err error
}

func (f loadFailure) String() string { return f.at.Format("15:04:05.000") + ": " + f.err.Error() }

func (c *chaosEnv) startLoad(addr string) *chaosLoad {
	l := &chaosLoad{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		_ = nodes.InNS(c.tier.LB, func() error {
			for range 200000 { // bounded; a fault lasts a minute at most
				select {
				case <-l.stopc:
					return nil
				default:
				}
				begin := time.Now()
				_, err := getHostname(addr)
				l.mu.Lock()
				l.total++
				if err != nil {
					l.failed = append(l.failed, loadFailure{begin, err})
				}
				l.mu.Unlock()
			}
			return nil
		})
	}()
	return l
}

func (l *chaosLoad) stop() (int, []loadFailure) {
	close(l.stopc)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.failed
}
