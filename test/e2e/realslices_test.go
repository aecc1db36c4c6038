package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/desired"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// realWait bounds waits on the real controllers (Pods made and Ready,
// slices written), which a busy machine slows down.
const realWait = 90 * time.Second

// realCluster is one apiserver with kube-controller-manager and kwok:
// Deployments make Pods, kwok makes them Ready, and the real endpoint-slice
// controller writes the slices. Three nodes stand in on 127.83.<k>.1-3.
type realCluster struct {
	t     *testing.T
	kube  *kubeapi.Server
	nodes map[string]string // name -> InternalIP
	// The Services: web (Local, named targetPort "web"), plain (Local,
	// unnamed port, numeric targetPort), empty (Local, selects nothing).
	web, plain, empty corev1.ServicePort
}

// TestRealSlices runs the controller against EndpointSlices written by the
// real endpoint-slice controller (kube-controller-manager v1.36) from real
// Deployments, in node and pod mode, with the default check (auto: the
// servers follow their node and its check), checks on and off:
//
//   - Deployment web-a (3 Pods on n1) names its port "web" (8080), web-b (1
//     Pod on n2) has no port named "web", web-c (1 Pod on n3) names 8081
//     "web". Service web (Local, targetPort "web") so has a slice without
//     ports (n2's Pod), one slice for 8081 and, at 2 endpoints per slice,
//     two for 8080. kube-proxy on n2 has no endpoint for web and drops its
//     traffic: n2 must not be a server of web (its stand-in does not even
//     listen on web's nodePort, as its kube-proxy would drop the traffic).
//   - Service plain (Local, unnamed port, targetPort 8080) covers every Pod:
//     slices with a port named "", all three nodes.
//   - Service empty selects nothing: one slice with no endpoints and no
//     ports, no servers.
//   - Then web-c scales to 0 and web-a to 2 while a finalizer holds their
//     Pods: terminating endpoints (ready=false, serving=true,
//     terminating=true). n3 drains; n1 still has ready endpoints and stays.
//
// Node mode sends real traffic through HAProxy to the node stand-ins. Pods
// are kwok's fakes at 10.244.x.x, which nothing answers and tests must not
// send packets to: pod mode runs without checks and asserts the servers
// HAProxy holds through the Runtime API.
func TestRealSlices(t *testing.T) {
	// In tproxy mode the whole test in one namespace of its own, before
	// the cluster starts: each mode's newEnvOn would otherwise re-run its
	// subtest in one, with a cluster of its own, beside this one.
	inTProxyNetns(t)
	c := startRealCluster(t)
	modes := []struct {
		name string
		args []string
	}{
		{"nodes-default", nil}, // check auto: servers follow their node and its /healthz check
		{"nodes-checks", []string{"--default-check=true"}},
		{"nodes-nochecks", []string{"--default-check=false"}},
		{"pods-nochecks", []string{"--default-check=false", "--targets", "pods"}},
	}
	for _, m := range modes {
		t.Run("steady/"+m.name, func(t *testing.T) { c.check(t, m.args, false) })
	}
	if t.Failed() {
		return
	}
	client := c.kube.Client(t)
	for dep, n := range map[string]int32{"web-c": 0, "web-a": 2} {
		if err := lab.ScaleDeployment(bg, client, ns, dep, n); err != nil {
			t.Fatal(err)
		}
	}
	c.waitSlices(t, func(sl []discoveryv1.EndpointSlice) error {
		if got := countEndpoints(sl, "web", func(e discoveryv1.Endpoint) bool {
			return !*e.Conditions.Ready && *e.Conditions.Serving && *e.Conditions.Terminating
		}); got != 2 {
			return fmt.Errorf("%d terminating endpoints of web, want 2", got)
		}
		return nil
	})
	for _, m := range modes {
		t.Run("terminating/"+m.name, func(t *testing.T) { c.check(t, m.args, true) })
	}
}

func startRealCluster(t *testing.T) *realCluster {
	t.Helper()
	begin := time.Now()
	kube := kubeapi.StartWithOptions(t, kubeapi.Options{Controllers: true,
		ControllerManagerArgs: []string{"--max-endpoints-per-slice=2"}})
	client := kube.Client(t)
	c := &realCluster{t: t, kube: kube, nodes: map[string]string{}}
	k := 1 + rand.IntN(250)
	np := nodePort()
	c.web = corev1.ServicePort{Name: "http", Port: int32(haproxytest.FreePort(t)), NodePort: np, TargetPort: intstr.FromString("web")}
	c.plain = corev1.ServicePort{Port: int32(haproxytest.FreePort(t)), NodePort: np + 1, TargetPort: intstr.FromInt32(8080)}
	c.empty = corev1.ServicePort{Name: "http", Port: int32(haproxytest.FreePort(t)), NodePort: np + 2, TargetPort: intstr.FromInt32(8080)}
	// What each stand-in answers on: kube-proxy of a node without a local
	// endpoint of a Local Service drops its traffic.
	listen := map[string][]int32{"n1": {c.web.NodePort, c.plain.NodePort}, "n2": {c.plain.NodePort}, "n3": {c.web.NodePort, c.plain.NodePort}}
	for i, n := range []string{"n1", "n2", "n3"} {
		ip := fmt.Sprintf("127.83.%d.%d", k, i+1)
		c.nodes[n] = ip
		s := lab.NewNodeServer(n, ip)
		t.Cleanup(s.Close)
		for _, p := range listen[n] {
			if err := s.Listen(int(p)); err != nil {
				t.Fatal(err)
			}
		}
		h, err := lab.NewHealthServer(fmt.Sprintf("%s:%d", ip, kubeProxyHealthPort)) // the default node check
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Close)
		if err := lab.CreateKwokNode(bg, client, n, ip); err != nil {
			t.Fatal(err)
		}
	}
	class := desired.DefaultClass
	for name, p := range map[string]corev1.ServicePort{"web": c.web, "plain": c.plain, "empty": c.empty} {
		sel := "web"
		if name == "empty" {
			sel = "nothing"
		}
		p.Protocol = corev1.ProtocolTCP
		_, err := client.CoreV1().Services(ns).Create(bg, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class,
				ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
				Selector:              map[string]string{"app": sel}, Ports: []corev1.ServicePort{p}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("service %s: %v", name, err)
		}
	}
	for _, d := range []lab.Deployment{
		{Name: "web-a", Node: "n1", Replicas: 3, Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}, Hold: true},
		{Name: "web-b", Node: "n2", Replicas: 1, Ports: []corev1.ContainerPort{{Name: "other", ContainerPort: 9000}}},
		{Name: "web-c", Node: "n3", Replicas: 1, Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8081}}, Hold: true},
	} {
		d.Namespace, d.App = ns, "web"
		if err := lab.CreateDeployment(bg, client, d); err != nil {
			t.Fatal(err)
		}
	}
	// Let terminating Pods go before the apiserver stops (tidy logs).
	t.Cleanup(func() { _ = lab.Release(bg, client, ns) })

	// The shapes the real controller writes (FIELD-NOTES): if it stops
	// writing them, this test no longer covers them and says so.
	ready := func(e discoveryv1.Endpoint) bool { return *e.Conditions.Ready }
	c.waitSlices(t, func(sl []discoveryv1.EndpointSlice) error {
		var errs []string
		if got := countEndpoints(sl, "web", ready); got != 5 {
			errs = append(errs, fmt.Sprintf("web: %d ready endpoints, want 5", got))
		}
		if got := countEndpoints(sl, "plain", ready); got != 5 {
			errs = append(errs, fmt.Sprintf("plain: %d ready endpoints, want 5", got))
		}
		shapes := sliceShapes(sl)
		for _, want := range []string{"web:[]:1", "web:[http/8080]:2", "web:[http/8080]:1", "web:[http/8081]:1", "plain:[/8080]:2", "plain:[/8080]:1", "empty:[]:0"} {
			if !slices.Contains(shapes, want) {
				errs = append(errs, "no slice "+want)
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("%s (slices: %v)", strings.Join(errs, "; "), shapes)
		}
		return nil
	})
	t.Logf("cluster with Pods and slices ready in %v", time.Since(begin).Round(time.Millisecond))
	return c
}

// waitSlices polls the EndpointSlices of the namespace until cond accepts them.
func (c *realCluster) waitSlices(t *testing.T, cond func([]discoveryv1.EndpointSlice) error) {
	t.Helper()
	client := c.kube.Client(t)
	deadline := time.Now().Add(realWait)
	var err error
	for time.Now().Before(deadline) {
		var l *discoveryv1.EndpointSliceList
		if l, err = client.DiscoveryV1().EndpointSlices(ns).List(bg, metav1.ListOptions{}); err == nil {
			if err = cond(l.Items); err == nil {
				return
			}
		}
		time.Sleep(100 * time.Millisecond) // poll interval
	}
	t.Fatalf("EndpointSlices not as expected within %v: %v", realWait, err)
}

func countEndpoints(sl []discoveryv1.EndpointSlice, svc string, match func(discoveryv1.Endpoint) bool) int {
	n := 0
	for _, s := range sl {
		if s.Labels[discoveryv1.LabelServiceName] != svc {
			continue
		}
		for _, e := range s.Endpoints {
			if match(e) {
				n++
			}
		}
	}
	return n
}

// sliceShapes describes each slice as "service:[name/port ...]:endpoints".
func sliceShapes(sl []discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range sl {
		var ports []string
		for _, p := range s.Ports {
			ports = append(ports, fmt.Sprintf("%s/%d", *p.Name, *p.Port))
		}
		out = append(out, fmt.Sprintf("%s:[%s]:%d", s.Labels[discoveryv1.LabelServiceName], strings.Join(ports, " "), len(s.Endpoints)))
	}
	slices.Sort(out)
	return out
}

// check runs HAProxy and the controller with args against the cluster and
// asserts the servers of each Service (and, in node mode, the traffic).
func (c *realCluster) check(t *testing.T, args []string, terminating bool) {
	e := newEnvOn(t, c.kube)
	e.startController(args...)
	pods := slices.Contains(args, "pods")
	be := func(p corev1.ServicePort, svc string) string { return fmt.Sprintf("be_%s_%s_%d", ns, svc, p.Port) }

	var want map[string][]string // backend -> servers ("addr:port", "~" for drain)
	if pods {
		ips := c.podIPs(t)
		want = map[string][]string{be(c.empty, "empty"): nil}
		for _, p := range ips["web-a"] {
			want[be(c.web, "web")] = append(want[be(c.web, "web")], p.ip+":8080"+p.drain())
			want[be(c.plain, "plain")] = append(want[be(c.plain, "plain")], p.ip+":8080"+p.drain())
		}
		for _, p := range ips["web-c"] {
			want[be(c.web, "web")] = append(want[be(c.web, "web")], p.ip+":8081"+p.drain())
			want[be(c.plain, "plain")] = append(want[be(c.plain, "plain")], p.ip+":8080"+p.drain())
		}
		for _, p := range ips["web-b"] { // lacks "web": only in plain
			want[be(c.plain, "plain")] = append(want[be(c.plain, "plain")], p.ip+":8080"+p.drain())
		}
	} else {
		n3 := ""
		if terminating {
			n3 = "~"
		}
		at := func(n string, p corev1.ServicePort, mark string) string {
			return fmt.Sprintf("%s:%d%s", c.nodes[n], p.NodePort, mark)
		}
		want = map[string][]string{
			be(c.web, "web"):     {at("n1", c.web, ""), at("n3", c.web, n3)},
			be(c.plain, "plain"): {at("n1", c.plain, ""), at("n2", c.plain, ""), at("n3", c.plain, n3)},
			be(c.empty, "empty"): nil,
		}
	}
	for b, s := range want {
		slices.Sort(s)
		want[b] = s
	}
	e.eventually("HAProxy's servers", func() error { return c.servers(e, want) })
	if pods {
		return
	}
	// Real traffic through HAProxy: web only to n1 and n3, plain to every
	// node (n3 takes no new connections while it drains), and not one
	// failed connection.
	webNodes, plainNodes := []string{"n1", "n3"}, []string{"n1", "n2", "n3"}
	if terminating {
		webNodes, plainNodes = []string{"n1"}, []string{"n1", "n2"}
	}
	e.eventually("web traffic", serves(c.web.Port, webNodes...))
	e.eventually("plain traffic", serves(c.plain.Port, plainNodes...))
	for _, p := range []corev1.ServicePort{c.web, c.plain} {
		if total, failed, err := load(p.Port, 0, 40, nil); failed != 0 {
			t.Errorf("port %d: %d of %d connections failed (first: %v)", p.Port, failed, total, err)
		}
	}
}

type podIP struct {
	ip          string
	terminating bool
}

func (p podIP) drain() string {
	if p.terminating {
		return "~"
	}
	return ""
}

// podIPs lists the IPs of the Pods of each Deployment.
func (c *realCluster) podIPs(t *testing.T) map[string][]podIP {
	t.Helper()
	l, err := c.kube.Client(t).CoreV1().Pods(ns).List(bg, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]podIP{}
	for _, p := range l.Items {
		if p.Status.PodIP == "" {
			t.Fatalf("pod %s has no IP yet", p.Name)
		}
		d := p.Labels["deployment"]
		out[d] = append(out[d], podIP{p.Status.PodIP, p.DeletionTimestamp != nil})
	}
	return out
}

// servers compares the servers HAProxy has in service or draining (not in
// maintenance) in each backend of want.
func (c *realCluster) servers(e *env, want map[string][]string) error {
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	// A connection of its own: a persistent one made before a reload
	// would still talk to the old worker.
	rt := haproxy.NewRuntime(e.hap.StatsSocket)
	defer rt.Close()
	st, err := rt.ShowServersState(ctx)
	if err != nil {
		return err
	}
	// HAProxy's name of each backend of want: with the backend pool (tproxy
	// mode's default) a Service's backend is the spare it took.
	named := map[string]string{}
	for b := range want {
		named[e.haproxyBackend(b)] = b
	}
	got := map[string][]string{}
	seen := map[string]bool{}
	for _, s := range st {
		seen[s.Backend] = true
		b, ok := named[s.Backend]
		if !ok || s.Maint() {
			continue
		}
		v := fmt.Sprintf("%s:%d", s.Addr, s.Port)
		if s.Drain() {
			v += "~"
		}
		got[b] = append(got[b], v)
	}
	var errs []string
	for hb, b := range named {
		w, g := want[b], got[b]
		slices.Sort(g)
		if !seen[hb] && len(w) > 0 {
			errs = append(errs, b+" ("+hb+"): no such backend")
		} else if !slices.Equal(g, w) {
			errs = append(errs, fmt.Sprintf("%s: %v, want %v", b, g, w))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s (backends: %v)", strings.Join(errs, "; "), seen)
	}
	return nil
}
