package e2e

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/nodes"
)

// chartNS is where the chart is installed in the real-node tier.
const chartNS = "hks"

// chartPool is the AddressPool of TestRealNodeChartAnnounce: a free part
// of the tier's underlay (nodes' network.go: .1-.3 and .10+ are taken).
const chartPool = "198.18.0.200-198.18.0.209"

// chartPeers are the tier's two nodes' underlay addresses (network.go's
// nodeAddr), the layer-2 group.
const chartPeers = "198.18.0.11,198.18.0.12"

// The chart, rendered by helm template as an operator installs it (the
// services mode's DaemonSet, its RBAC, the AddressPool CRD, the layer-2
// announcer on each node's eth0) with the project's image, applied to the
// real-node tier and run by kubelet and containerd: the controller reaches
// the apiserver as any Pod does (default/kubernetes's ClusterIP through
// kube-proxy, its projected service-account token, kube-root-ca.crt),
// with exactly the chart's role. Asserted: both Pods Ready; the
// controller's process runs as uid 99 with only NET_ADMIN and NET_RAW
// effective; a LoadBalancer Service gets a pool address, held on exactly
// one node's eth0, and a client on the underlay is answered through it by
// the agnhost Pods; deleting the owner's Pod hands the address to the
// other node (the preStop drain) while the client dials every 10 ms, with
// no connection refused.
func TestRealNodeChartAnnounce(t *testing.T) {
	// The nodes' addresses are known before the tier starts (network.go),
	// and a chart that does not render fails before it.
	helm := tool(t, "helm")
	// HKS_CHART_L2_INTERVAL: the announcers' heartbeat interval (the
	// chart's services.announce.l2.interval; a host silent for 3 is gone).
	// Unset: the chart's default (100 ms).
	var extra []string
	if v := os.Getenv("HKS_CHART_L2_INTERVAL"); v != "" {
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			t.Fatalf("HKS_CHART_L2_INTERVAL=%q: want a positive duration", v)
		}
		extra = append(extra, "--set", "services.announce.l2.interval="+v)
	}
	out, err := run(t, helm, append([]string{"template", "hks", chart, "--namespace", chartNS, "--include-crds",
		"--set", "image.repository=" + imageRepo(nodes.ControllerImage), "--set-string", "image.tag=" + imageTag(nodes.ControllerImage),
		"--set", "image.pullPolicy=Never",
		"--set", "services.haproxy.image.repository=" + imageRepo(nodes.ControllerImage),
		"--set-string", "services.haproxy.image.tag=" + imageTag(nodes.ControllerImage),
		"--set", "services.haproxy.image.pullPolicy=Never",
		"--set", "services.addressPools=true",
		"--set", "services.announce.l2.interface=eth0",
		"--set", "services.announce.l2.peers={" + chartPeers + "}",
		"--set", "services.announce.l2.keySecret=l2-key",
		"--set", "logFormat=text"}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	tier := nodes.Start(t, nodes.Options{Images: []string{"controller-images.tar"}, InCluster: true})
	c := tier.Client
	if got := tier.Nodes[0].Addr + "," + tier.Nodes[1].Addr; got != chartPeers {
		t.Fatalf("the nodes are at %s, the chart was given %s", got, chartPeers)
	}
	if _, err := c.CoreV1().Namespaces().Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: chartNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	key := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: chartNS, Name: "l2-key"},
		Data: map[string][]byte{"key": []byte("the tier's layer-2 group key, 32b")}}
	if _, err := c.CoreV1().Secrets(chartNS).Create(bg, key, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	applyObjects(t, tier.Kube.Config, objects(t, out))
	applyObjects(t, tier.Kube.Config, objects(t, []byte(`apiVersion: haproxy-k8s-sync.io/v1alpha1
kind: AddressPool
metadata: {name: tier}
spec: {addresses: [`+chartPool+`]}
`)))

	r := &realNodeEnv{env: &env{t: t, kube: tier.Kube, client: c}, tier: tier}
	r.createDeployment(webApp("web", "web", tier.Nodes[0].Name, 2))
	class := "haproxy-k8s-sync.io/lb"
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class,
			Selector: map[string]string{"app": "web"},
			// Not 80: HAProxy runs as uid 99 and a non-root container's added
			// NET_BIND_SERVICE has no effect (no ambient capabilities), so
			// the chart's HAProxy cannot bind a port below 1024 unless the
			// node lowers net.ipv4.ip_unprivileged_port_start.
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intstr.FromString("http")}}},
	}
	r.createService(svc)
	r.waitRolledOut("web")
	pods := waitChartPods(t, r, len(tier.Nodes))

	for _, n := range tier.Nodes {
		st, err := controllerStatus(n)
		if err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		if st.uid != "99" || st.gid != "99" || st.capEff != "0000000000003000" {
			t.Errorf("%s: the controller runs as uid %s gid %s with CapEff %s, want 99, 99, 0000000000003000 (NET_ADMIN, NET_RAW)",
				n.Name, st.uid, st.gid, st.capEff)
		}
	}

	addr := waitServiceAddress(t, r, "web")
	if !netip.MustParsePrefix("198.18.0.192/27").Contains(netip.MustParseAddr(addr)) {
		t.Fatalf("the Service got %s, not an address of the pool %s", addr, chartPool)
	}
	vip := addr + ":8080"
	var owner *nodes.Node
	err = waitUntil(realNodeWait, func() error {
		held := holders(t, tier, addr)
		if len(held) != 1 {
			return fmt.Errorf("%s held by %d nodes", addr, len(held))
		}
		owner = held[0]
		_, err := clientHostname(tier, vip)
		return err
	})
	if err != nil {
		t.Fatalf("%s not announced and served: %v\n%s", vip, err, chartPodReport(r))
	}
	t.Logf("%s announced by %s and served; the chart's Pods %v", addr, owner.Name, pods)

	// The owner's Pod deleted: its preStop drains it, the other node takes
	// the address while this HAProxy still serves.
	load := startClientLoad(tier, vip)
	ownerPod := pods[owner.Name]
	deleted := time.Now()
	if err := c.CoreV1().Pods(chartNS).Delete(bg, ownerPod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var next *nodes.Node
	err = waitUntil(realNodeWait, func() error {
		held := holders(t, tier, addr)
		if len(held) != 1 || held[0] == owner {
			return fmt.Errorf("%s held by %v", addr, nodeNames(held))
		}
		next = held[0]
		return nil
	})
	moved := time.Since(deleted)
	if err != nil {
		load.stop()
		t.Fatalf("the address did not move off %s: %v\n%s", owner.Name, err, chartPodReport(r))
	}
	// The old Pod gone for good (its HAProxy stopped), the client still answered.
	err = waitUntil(realNodeWait, func() error {
		_, err := c.CoreV1().Pods(chartNS).Get(bg, ownerPod, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%s still there: %v", ownerPod, err)
	})
	if err != nil {
		t.Error(err)
	}
	// The DaemonSet's new Pod on the old owner's node Ready: it starts as
	// a fresh host and takes nothing back (sticky).
	pods = waitChartPods(t, r, len(tier.Nodes))
	total, failed := load.stop()
	t.Logf("%s moved %s -> %s, seen %v after the Pod's deletion; %d connections until the new Pod was Ready, %d failed: %v",
		addr, owner.Name, next.Name, moved.Round(time.Millisecond), total, len(failed), failed)
	if held := holders(t, tier, addr); len(held) != 1 || held[0] != next {
		t.Errorf("after the new Pod started, %s is held by %v, want %s alone\n%s\n(the replaced Pod, %s)\n%s", addr, nodeNames(held), next.Name,
			announcerLog(tier, pods), ownerPod, announcerLog(tier, map[string]string{owner.Name: ownerPod}))
	}
	refused := 0
	for _, f := range failed {
		if strings.Contains(f, "refused") {
			refused++
			t.Errorf("a connection refused during the hand-over: %s", f)
		}
	}
	// At most the connection in flight at the move (accepted by the old
	// owner just before it let go: docs/addresses.md, TestDrainHandsOver).
	if len(failed)-refused > 1 {
		t.Errorf("%d connections failed during the hand-over, want at most 1", len(failed)-refused)
	}
	if total < 50 {
		t.Errorf("only %d connections tried during the hand-over", total)
	}
	if t.Failed() {
		return
	}

	// With HKS_CHART_OUTAGE (a duration; make failover: 10m) the apiserver
	// is stopped that long: nothing moves; then the holder's HAProxy
	// killed during the outage still fails over within the bound (2 s, on
	// a loaded machine; the 0.3 s p95 is measured in namespaces).
	// Not in make test (10 minutes). With the default 100 ms heartbeats
	// the loaded test machine's process stalls (250-550 ms) moved the
	// address 3 minutes in, twice, until the peers allowed for each
	// host's told stalls (announce/stalls.go); make failover runs it at
	// the default interval (docs/addresses.md).
	v := os.Getenv("HKS_CHART_OUTAGE")
	if v == "" {
		return
	}
	outage, err := time.ParseDuration(v)
	if err != nil || outage <= 0 {
		t.Fatalf("HKS_CHART_OUTAGE=%q: want a positive duration", v)
	}
	chartOutage(t, tier, pods, addr, vip, next, outage, 2*time.Second)
}

// clientLoad dials vip from the tier's client namespace every 10 ms, a new
// connection each, until stopped.
type clientLoad struct {
	stopc, done chan struct{}
	mu          sync.Mutex
	total       int
	failed      []string
}

func startClientLoad(tier *nodes.Tier, vip string) *clientLoad {
	l := &clientLoad{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		_ = nodes.InNS(tier.ClientNS, func() error {
			for i := 0; i < 100000; i++ {
				select {
				case <-l.stopc:
					return nil
				case <-time.After(10 * time.Millisecond): // the dial interval
				}
				_, err := getHostname(vip)
				l.mu.Lock()
				l.total++
				if err != nil {
					l.failed = append(l.failed, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), err))
				}
				l.mu.Unlock()
			}
			return nil
		})
	}()
	return l
}

func (l *clientLoad) stop() (int, []string) {
	close(l.stopc)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.failed
}
