package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/nodes"
)

// imageRepo and imageTag split REPO:TAG.
func imageRepo(image string) string { return image[:strings.LastIndex(image, ":")] }
func imageTag(image string) string  { return image[strings.LastIndex(image, ":")+1:] }

// applyObjects creates the objects as they are, in order, waiting for a
// kind to be served (a CRD created just before) up to realNodeWait.
func applyObjects(t *testing.T, cfg *rest.Config, objs []*unstructured.Unstructured) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		err := waitUntil(realNodeWait, func() error {
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				mapper.Reset()
				return err
			}
			var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
			if o.GetNamespace() != "" {
				ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
			}
			_, err = ri.Create(bg, o, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
		if err != nil {
			t.Fatalf("%s %s/%s: %v", gvk.Kind, o.GetNamespace(), o.GetName(), err)
		}
	}
}

// waitChartPods waits until the chart's DaemonSet has a Ready Pod on each
// of n nodes and returns their names by node.
func waitChartPods(t *testing.T, r *realNodeEnv, n int) map[string]string {
	t.Helper()
	var byNode map[string]string
	err := waitUntil(realNodeWait, func() error {
		pods, err := r.client.CoreV1().Pods(chartNS).List(bg, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=haproxy-k8s-sync"})
		if err != nil {
			return err
		}
		byNode = map[string]string{}
		for _, p := range pods.Items {
			if podReady(&p) && p.DeletionTimestamp == nil {
				byNode[p.Spec.NodeName] = p.Name
			}
		}
		if len(byNode) != n {
			return fmt.Errorf("%d of %d Pods Ready", len(byNode), n)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the chart's Pods: %v\n%s\n%s", err, chartPodReport(r), r.tier.LogTail(30))
	}
	return byNode
}

// chartPodReport is podReport for the chart's namespace, with its Events.
func chartPodReport(r *realNodeEnv) string {
	var b strings.Builder
	pods, err := r.client.CoreV1().Pods(chartNS).List(bg, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s on %s: %s ready=%v\n", p.Name, p.Spec.NodeName, p.Status.Phase, podReady(&p))
		for _, c := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			fmt.Fprintf(&b, "  %s: restarts %d %+v last %+v\n", c.Name, c.RestartCount, c.State, c.LastTerminationState)
		}
		if n := r.tier.Node(p.Spec.NodeName); n != nil {
			b.WriteString(n.ContainerLog(chartNS, p.Name, "sync", 40))
		}
	}
	dss, err := r.client.AppsV1().DaemonSets(chartNS).List(bg, metav1.ListOptions{})
	if err == nil {
		for _, d := range dss.Items {
			fmt.Fprintf(&b, "daemonset %s: %+v\n", d.Name, d.Status)
		}
	}
	nds, err := r.client.CoreV1().Nodes().List(bg, metav1.ListOptions{})
	if err == nil {
		for _, n := range nds.Items {
			fmt.Fprintf(&b, "node %s: unschedulable %v taints %v labels %v\n", n.Name, n.Spec.Unschedulable, n.Spec.Taints, n.Labels)
		}
	}
	evs, err := r.client.CoreV1().Events(chartNS).List(bg, metav1.ListOptions{})
	if err == nil {
		for _, e := range evs.Items {
			fmt.Fprintf(&b, "event %s %s: %s %s\n", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	return b.String()
}

// procStatus is what /proc/PID/status says of a process's identity.
type procStatus struct{ uid, gid, capEff string }

// procsInNS lists the processes in node n's network namespace whose
// command line match accepts (argv split at NULs).
func procsInNS(n *nodes.Node, match func(argv [][]byte) bool) ([]string, error) {
	fi, err := os.Stat(nodes.NSPath(n.NS))
	if err != nil {
		return nil, err
	}
	want := fmt.Sprintf("net:[%d]", fi.Sys().(*syscall.Stat_t).Ino)
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range dirs {
		cmd, err := os.ReadFile(d + "/cmdline")
		if err != nil || !match(bytes.Split(cmd, []byte{0})) {
			continue
		}
		if ns, err := os.Readlink(d + "/ns/net"); err == nil && ns == want {
			out = append(out, d)
		}
	}
	return out, nil
}

// controllerStatus finds the controller's process (haproxy-k8s-sync run)
// in node n's network namespace and reads its real uid and gid and its
// effective capabilities.
func controllerStatus(n *nodes.Node) (procStatus, error) {
	dirs, err := procsInNS(n, func(argv [][]byte) bool {
		return len(argv) >= 2 && filepath.Base(string(argv[0])) == "haproxy-k8s-sync" && string(argv[1]) == "run"
	})
	if err != nil {
		return procStatus{}, err
	}
	if len(dirs) == 0 {
		return procStatus{}, fmt.Errorf("no controller process in %s", n.NS)
	}
	status, err := os.ReadFile(dirs[0] + "/status")
	if err != nil {
		return procStatus{}, err
	}
	var st procStatus
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "Uid:":
			st.uid = f[1]
		case len(f) >= 2 && f[0] == "Gid:":
			st.gid = f[1]
		case len(f) >= 2 && f[0] == "CapEff:":
			st.capEff = f[1]
		}
	}
	return st, nil
}

// waitServiceAddress waits for the Service's first load-balancer address.
func waitServiceAddress(t *testing.T, r *realNodeEnv, name string) string {
	t.Helper()
	var addr string
	err := waitUntil(realNodeWait, func() error {
		s, err := r.client.CoreV1().Services(ns).Get(bg, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(s.Status.LoadBalancer.Ingress) == 0 {
			return fmt.Errorf("no address in %s's status", name)
		}
		addr = s.Status.LoadBalancer.Ingress[0].IP
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, chartPodReport(r))
	}
	return addr
}

// holders are the nodes holding addr on their eth0.
func holders(t *testing.T, tier *nodes.Tier, addr string) []*nodes.Node {
	t.Helper()
	var out []*nodes.Node
	for _, n := range tier.Nodes {
		b, err := exec.Command("ip", "-n", n.NS, "-o", "addr", "show", "dev", "eth0").CombinedOutput()
		if err != nil {
			t.Fatalf("%s: ip addr: %v: %s", n.Name, err, b)
		}
		if strings.Contains(string(b), " "+addr+"/") {
			out = append(out, n)
		}
	}
	return out
}

func nodeNames(ns []*nodes.Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return out
}

// clientHostname is getHostname from the tier's client namespace.
func clientHostname(tier *nodes.Tier, addr string) (string, error) {
	var name string
	err := nodes.InNS(tier.ClientNS, func() (err error) {
		name, err = getHostname(addr)
		return err
	})
	return name, err
}
