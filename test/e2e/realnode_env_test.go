package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/nodes"
)

// The real-node tier (internal/testing/nodes): two real nodes (containerd,
// kubelet, kube-proxy in nftables mode) with agnhost netexec Pods, HAProxy
// in the load balancer's namespace, the controller against the same
// apiserver. Frontends listen on the load balancer's loopback; the tests'
// clients connect from inside that namespace.

// realNodeWait bounds waits on real Pods (created, Ready, rolled).
const realNodeWait = 120 * time.Second

type realNodeEnv struct {
	*env
	tier *nodes.Tier

	loadsMu sync.Mutex
	loads   []*steadyLoad // running, for servedBy
}

func newRealNodeEnv(t *testing.T) *realNodeEnv {
	t.Helper()
	return newRealNodeEnvWith(t, nodes.Options{})
}

func newRealNodeEnvWith(t *testing.T, opts nodes.Options) *realNodeEnv {
	t.Helper()
	return newRealNodeEnvIn(t, opts, t.TempDir())
}

// newRealNodeEnvIn is newRealNodeEnvWith with HAProxy's and the
// controller's files in dir.
func newRealNodeEnvIn(t *testing.T, opts nodes.Options, dir string) *realNodeEnv {
	t.Helper()
	tier := nodes.Start(t, opts)
	e := &env{t: t, kube: tier.Kube, client: tier.Client, dir: dir, listen: realNodeListening(tier.LB)}
	if e.listen.tproxy {
		// The Services' address, held by the load balancer as an
		// announcer would hold it (the fixed listener's clients here run
		// in its namespace).
		if out, err := execOut("ip", "-n", tier.LB, "addr", "add", tproxyVIP+"/32", "dev", "eth0"); err != nil {
			t.Fatalf("the Services' address in the load balancer's namespace: %v: %s", err, out)
		}
	}
	e.cfgPath = initHAProxyFor(t, e.dir, e.listen)
	e.hap = haproxytest.StartInNetNS(t, e.dir, e.cfgPath, nodes.NSPath(tier.LB))
	e.master = haproxy.NewMaster(e.hap.MasterSocket)
	e.runtime = haproxy.NewRuntime(e.hap.StatsSocket)
	t.Cleanup(func() { e.runtime.Close() })
	return &realNodeEnv{env: e, tier: tier}
}

// webApp is a Deployment of agnhost netexec pinned to one node (no
// scheduler runs: the template names the node), with a readiness probe, a
// preStop pause and a grace period, rolled one Pod at a time.
func webApp(name, app, node string, replicas int32) *appsv1.Deployment {
	lbl := map[string]string{"app": app, "deployment": name}
	grace := int64(15)
	zero := intstr.FromInt32(0)
	one := intstr.FromInt32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &zero, MaxSurge: &one}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{
					NodeName:                      node,
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{
						Name:            "netexec",
						Image:           nodes.AgnhostImage,
						ImagePullPolicy: corev1.PullNever,
						// On SIGTERM netexec turns not ready and serves 3 s more.
						Args: []string{"netexec", "--http-port=8080", "--udp-port=8081", "--delay-shutdown=3"},
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080},
							{Name: "udp", ContainerPort: 8081, Protocol: corev1.ProtocolUDP}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}},
							// Three misses of 2 s: a loaded machine's stall (make test's
							// queue; kubelet's probes then timed out at 1 s, both
							// Pods went not ready at once and 5 connections of
							// TestRealNodeChartAnnounce failed) does not take every
							// backend out. A deleted Pod's endpoint is not ready at
							// once by its deletion, not by the probe.
							PeriodSeconds: 1, TimeoutSeconds: 2, FailureThreshold: 3,
						},
						Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 2}}},
					}},
				},
			},
		},
	}
}

func (r *realNodeEnv) createDeployment(d *appsv1.Deployment) {
	r.t.Helper()
	if _, err := r.client.AppsV1().Deployments(ns).Create(bg, d, metav1.CreateOptions{}); err != nil {
		r.t.Fatal(err)
	}
}

// webService is a NodePort Service for the app, opted in, frontend on
// port, with the given traffic policy.
func webService(name, app string, port int32, policy corev1.ServiceExternalTrafficPolicy) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"haproxy-k8s-sync.io/enabled": "true"}},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeNodePort,
			Selector:              map[string]string{"app": app},
			ExternalTrafficPolicy: policy,
			Ports:                 []corev1.ServicePort{{Name: "http", Port: port, TargetPort: intstr.FromString("http")}},
		},
	}
}

func (r *realNodeEnv) createService(s *corev1.Service) *corev1.Service {
	r.t.Helper()
	got, err := r.client.CoreV1().Services(ns).Create(bg, s, metav1.CreateOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	return got
}

// waitRolledOut waits until the Deployment's Pods are all of its current
// template, Ready, and no other Pod of it is left.
func (r *realNodeEnv) waitRolledOut(names ...string) {
	r.t.Helper()
	err := waitUntil(realNodeWait, func() error {
		for _, name := range names {
			d, err := r.client.AppsV1().Deployments(ns).Get(bg, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			want := *d.Spec.Replicas
			st := d.Status
			if st.ObservedGeneration < d.Generation || st.UpdatedReplicas != want || st.ReadyReplicas != want || st.Replicas != want {
				return fmt.Errorf("%s: %d updated, %d ready, %d in all, want %d", name, st.UpdatedReplicas, st.ReadyReplicas, st.Replicas, want)
			}
			pods, err := r.client.CoreV1().Pods(ns).List(bg, metav1.ListOptions{LabelSelector: labels.Set{"deployment": name}.String()})
			if err != nil {
				return err
			}
			if int32(len(pods.Items)) != want {
				return fmt.Errorf("%s: %d Pods, want %d", name, len(pods.Items), want)
			}
		}
		return nil
	})
	if err != nil {
		r.t.Fatalf("rollout: %v\n%s", err, r.podReport())
	}
}

// podReport lists the Pods and their phase, for failure messages.
func (r *realNodeEnv) podReport() string {
	pods, err := r.client.CoreV1().Pods(ns).List(bg, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s on %s: %s %s ready=%v deleting=%v\n", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP, podReady(&p), p.DeletionTimestamp != nil)
		for _, c := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, "  %s: %+v\n", c.Name, c.State)
		}
	}
	return b.String()
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// restart rolls the Deployments' Pods, as kubectl rollout restart does.
func (r *realNodeEnv) restart(names ...string) {
	r.t.Helper()
	for _, name := range names {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := r.client.AppsV1().Deployments(ns).Get(bg, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Spec.Template.Annotations == nil {
				d.Spec.Template.Annotations = map[string]string{}
			}
			d.Spec.Template.Annotations["test.haproxy-k8s-sync.io/restartedAt"] = time.Now().Format(time.RFC3339Nano)
			_, err = r.client.AppsV1().Deployments(ns).Update(bg, d, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			r.t.Fatal(err)
		}
	}
}

// podNames lists the names of the Pods of the app label.
func (r *realNodeEnv) podNames(app string) map[string]bool {
	r.t.Helper()
	pods, err := r.client.CoreV1().Pods(ns).List(bg, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range pods.Items {
		out[p.Name] = true
	}
	return out
}

// hostname asks netexec's /hostname through addr (host:port) from the
// load balancer's namespace, on a new connection, and returns the Pod's
// name.
func (r *realNodeEnv) hostname(addr string) (string, error) {
	var name string
	err := nodes.InNS(r.tier.LB, func() (err error) {
		name, err = getHostname(addr)
		return err
	})
	return name, err
}

// getHostname is one HTTP/1.0 GET /hostname on a new connection, in the
// namespace of the calling thread.
func getHostname(addr string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.WriteString(c, "GET /hostname HTTP/1.0\r\nHost: test\r\n\r\n"); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /hostname: %s: %s", resp.Status, body)
	}
	return strings.TrimSpace(string(body)), nil
}

// steadyLoad runs sequential connections to addr from the load balancer's
// namespace until stopped, counting failures and the Pods that answered.
type steadyLoad struct {
	r      *realNodeEnv
	addr   string
	stopc  chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	total  int
	failed []string
	seen   map[string]int
	// dialled is, for each Pod, when the latest connection it answered
	// was dialled (servedBy counts the answers since its own start).
	dialled map[string]time.Time
}

func (r *realNodeEnv) startSteadyLoad(addr string) *steadyLoad {
	l := &steadyLoad{r: r, addr: addr, stopc: make(chan struct{}), done: make(chan struct{}), seen: map[string]int{}, dialled: map[string]time.Time{}}
	r.loadsMu.Lock()
	r.loads = append(r.loads, l)
	r.loadsMu.Unlock()
	go func() {
		defer close(l.done)
		_ = nodes.InNS(r.tier.LB, func() error {
			for i := 0; i < 200000; i++ {
				select {
				case <-l.stopc:
					return nil
				default:
				}
				dialled := time.Now()
				name, err := getHostname(addr)
				l.mu.Lock()
				l.total++
				if err != nil {
					l.failed = append(l.failed, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), err))
				} else {
					l.seen[name]++
					l.dialled[name] = dialled
				}
				l.mu.Unlock()
			}
			return nil
		})
	}()
	return l
}

// stop ends the load and returns what it saw.
func (l *steadyLoad) stop() (total int, failed []string, seen map[string]int) {
	close(l.stopc)
	<-l.done
	l.r.loadsMu.Lock()
	l.r.loads = slices.DeleteFunc(l.r.loads, func(o *steadyLoad) bool { return o == l })
	l.r.loadsMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.failed, l.seen
}

// waitUntil polls cond until nil or timeout.
func waitUntil(timeout time.Duration, cond func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %v: %w", timeout, err)
		case <-time.After(100 * time.Millisecond): // poll interval
		}
	}
}

// answeredSince lists the Pods that answered a connection to addr of a
// running steady load dialled at or after since.
func (r *realNodeEnv) answeredSince(addr string, since time.Time) []string {
	r.loadsMu.Lock()
	defer r.loadsMu.Unlock()
	var out []string
	for _, l := range r.loads {
		if l.addr != addr {
			continue
		}
		l.mu.Lock()
		for name, at := range l.dialled {
			if !at.Before(since) {
				out = append(out, name)
			}
		}
		l.mu.Unlock()
	}
	sort.Strings(out)
	return out
}
