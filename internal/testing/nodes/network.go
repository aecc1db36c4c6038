package nodes

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/vishvananda/netns"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/netnsrun"
)

// The tier's addresses (documentation and benchmark ranges only):
//
//	underlay 198.18.0.0/24   bridge in the underlay namespace, 198.18.0.1 (the apiserver's forwarder)
//	         198.18.0.2      the load balancer namespace (HAProxy, the controller's UDP path)
//	         198.18.0.3      a client namespace (traffic the load balancer's kernel must forward)
//	         198.18.0.10+i   node i's InternalIP
//	Pods     198.19.i.0/24   node i's Pod CIDR (bridge cni0, gateway 198.19.i.1), routed by the nodes
//	Services 198.18.128.0/20 ClusterIPs
const (
	UnderlayGateway = "198.18.0.1"
	LBAddr          = "198.18.0.2"
	ClientAddr      = "198.18.0.3"
	ClusterCIDR     = "198.19.0.0/16"
	ServiceCIDR     = "198.18.128.0/20"
	// APIPort is where the apiserver is reached from the namespaces, on
	// UnderlayGateway.
	APIPort = 6443
)

func nodeAddr(i int) string     { return fmt.Sprintf("198.18.0.%d", 10+i) }
func podSubnet(i int) string    { return fmt.Sprintf("198.19.%d.0/24", i) }
func podGateway(i int) string   { return fmt.Sprintf("198.19.%d.1", i) }
func underlayPort(i int) string { return fmt.Sprintf("u%d", i) }

// ipCmd runs `ip -n ns args...`.
func ipCmd(ns string, args ...string) error {
	out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip -n %s %s: %w: %s", ns, strings.Join(args, " "), err, out)
	}
	return nil
}

// addNS creates a network namespace with lo up; cleanup removes it.
func (t *Tier) addNS(name string) error {
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns add %s: %v: %s", name, err, out)
	}
	t.cleanup(func() error {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			return fmt.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
		return nil
	})
	return ipCmd(name, "link", "set", "lo", "up")
}

// sysctl writes a per-namespace sysctl (net.*) inside ns.
func sysctl(ns, key, value string) error {
	h, err := netns.GetFromName(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	return netnsrun.Do(h, func() error {
		return os.WriteFile("/proc/sys/"+strings.ReplaceAll(key, ".", "/"), []byte(value), 0o644)
	})
}

// buildNetwork makes the underlay (a bridge), the load balancer's
// namespace and one namespace per node, each on a veth into the bridge,
// with routes to every node's Pod CIDR.
func (t *Tier) buildNetwork(n int) error {
	if err := t.addNS(t.Underlay); err != nil {
		return err
	}
	steps := [][]string{
		{t.Underlay, "link", "add", "br0", "type", "bridge"},
		{t.Underlay, "addr", "add", UnderlayGateway + "/24", "dev", "br0"},
		{t.Underlay, "link", "set", "br0", "up"},
	}
	attach := func(ns, port, addr string) {
		steps = append(steps,
			[]string{t.Underlay, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{t.Underlay, "link", "set", port, "master", "br0"},
			[]string{t.Underlay, "link", "set", port, "up"},
			[]string{ns, "addr", "add", addr + "/24", "dev", "eth0"},
			[]string{ns, "link", "set", "eth0", "up"},
			[]string{ns, "route", "add", "default", "via", UnderlayGateway},
		)
	}
	if err := t.addNS(t.LB); err != nil {
		return err
	}
	attach(t.LB, "lb", LBAddr)
	if err := t.addNS(t.ClientNS); err != nil {
		return err
	}
	attach(t.ClientNS, "cl", ClientAddr)
	for i := 1; i <= n; i++ {
		nd := &Node{Name: fmt.Sprintf("n%d", i), NS: fmt.Sprintf("%sn%d", t.prefix, i), Addr: nodeAddr(i),
			PodCIDR: podSubnet(i), index: i, tier: t}
		if err := t.addNS(nd.NS); err != nil {
			return err
		}
		attach(nd.NS, underlayPort(i), nd.Addr)
		t.Nodes = append(t.Nodes, nd)
	}
	// Every namespace routes each Pod CIDR to its node (a node's own is
	// on its cni0 bridge, made by the bridge plugin).
	for _, from := range append([]string{t.LB, t.Underlay}, t.nodeNS()...) {
		for _, to := range t.Nodes {
			if from == to.NS {
				continue
			}
			steps = append(steps, []string{from, "route", "add", to.PodCIDR, "via", to.Addr})
		}
	}
	for _, s := range steps {
		if err := ipCmd(s[0], s[1:]...); err != nil {
			return err
		}
	}
	for _, nd := range t.Nodes {
		if err := sysctl(nd.NS, "net.ipv4.ip_forward", "1"); err != nil {
			return fmt.Errorf("%s: ip_forward: %w", nd.Name, err)
		}
	}
	return nil
}

func (t *Tier) nodeNS() []string {
	var out []string
	for _, n := range t.Nodes {
		out = append(out, n.NS)
	}
	return out
}

// forward listens on addr inside namespace ns and forwards each
// connection to target, dialled from the test's own namespace: how the
// nodes reach the apiserver, which listens on loopback.
type forward struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

func startForward(ns, addr, target string) (*forward, error) {
	h, err := netns.GetFromName(ns)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	f := &forward{target: target, conns: map[net.Conn]bool{}}
	if err := netnsrun.Do(h, func() (err error) {
		f.ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		return nil, err
	}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

func (f *forward) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.pipe(c)
		}()
	}
}

func (f *forward) track(c net.Conn, add bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if add {
		if f.closed {
			return false
		}
		f.conns[c] = true
	} else {
		delete(f.conns, c)
	}
	return true
}

func (f *forward) pipe(c net.Conn) {
	defer c.Close()
	if !f.track(c, true) {
		return
	}
	defer f.track(c, false)
	up, err := net.Dial("tcp", f.target)
	if err != nil {
		return
	}
	defer up.Close()
	if !f.track(up, true) {
		return
	}
	defer f.track(up, false)
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(up, c)
	go cp(c, up)
	<-done
	<-done
}

// close stops listening and cuts every forwarded connection.
func (f *forward) close() error {
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	err := f.ln.Close()
	f.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// ListTable is `nft list table inet NAME` in namespace ns.
func (t *Tier) ListTable(ns, name string) (string, error) {
	out, err := exec.Command("ip", "netns", "exec", ns, "nft", "list", "table", "inet", name).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("nft list table: %w: %s", err, out)
	}
	return string(out), nil
}
