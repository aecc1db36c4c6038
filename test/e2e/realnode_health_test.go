package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/nodes"
)

// The node check of these tests: 500ms x 2.
const (
	realCheckInter = 500 * time.Millisecond
	realCheckFall  = 2
	// leaveSlack is what HAProxy's check scheduling and a busy machine
	// add to fall x inter.
	leaveSlack = 2 * time.Second
	// nodeGrace is the node-lifecycle controller's grace period here (the
	// kubelets renew their Lease every second).
	nodeGrace = 6 * time.Second
)

// TestRealNodeHealth runs, on one tier of real nodes, a Local Service on
// both nodes checked on the real healthCheckNodePort (the default), and
// with --local-check=service-port following the node check against the
// real kube-proxy's /healthz. Stopping n1's kube-proxy makes n1 leave
// within fall x inter, with no failed connection (its rules keep working
// meanwhile); a restarted kube-proxy brings it back. Then n1's kubelet
// stops: the node-lifecycle controller marks the Node not Ready (grace
// period 6 s here) and its Pods not ready, n1 leaves, still with no failed
// connection; a restarted kubelet brings it back, and with the default
// check n1's server serves only once n1's kube-proxy serves the endpoint
// (its healthCheckNodePort answers 200), every connection counted: the
// node check answers 200 seconds before that (issue 29), so under it the
// load stops before the kubelet restarts. Then UDP through the kernel and
// kube-proxy (udpThroughKubeProxy).
func TestRealNodeHealth(t *testing.T) {
	r := newRealNodeEnvWith(t, nodes.Options{ControllerManagerArgs: []string{
		"--controllers=" + strings.Join(append(kubeapi.Controllers, "node-lifecycle-controller"), ","),
		"--node-monitor-grace-period=" + nodeGrace.String(), "--node-monitor-period=1s",
	}})
	for i, n := range r.tier.Nodes {
		r.createDeployment(webApp("local-"+n.Name, "local", r.tier.Nodes[i].Name, 1))
	}
	svc := webService("local", "local", 8003, corev1.ServiceExternalTrafficPolicyLocal)
	// A LoadBalancer Service of our class gets a healthCheckNodePort.
	svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	class := "haproxy-k8s-sync.io/lb"
	svc.Spec.LoadBalancerClass = &class
	created := r.createService(svc)
	if created.Spec.HealthCheckNodePort == 0 {
		t.Fatal("no healthCheckNodePort allocated")
	}
	r.createUDPApp()
	r.waitRolledOut("local-n1", "local-n2")
	addr := r.serviceAddr(8003)
	parent := r.t
	// What the rendered backend must hold in each mode: servers checked
	// on the healthCheckNodePort, or following their node's check.
	// checkPort: the port HAProxy must check the servers on when they are
	// checked by themselves (0: they follow their node; a server in a slot
	// bound to no node checks its node, on kube-proxy's port).
	modes := []struct {
		name      string
		args      []string
		want      string
		checkPort int32
	}{
		{"health-check-node-port", nil, fmt.Sprintf("port %d", created.Spec.HealthCheckNodePort), created.Spec.HealthCheckNodePort},
		{"node-check", []string{"--local-check=service-port"}, "track _nodes/", 0},
	}
	for _, m := range modes {
		t.Run("local/"+m.name, func(t *testing.T) {
			r.t = t
			defer func() { r.t = parent }()
			r.startController(append([]string{
				"--node-check-interval", realCheckInter.String(), "--node-check-fall", fmt.Sprint(realCheckFall), "--node-check-rise", "1",
				"--default-check-interval", realCheckInter.String(), "--default-fall", fmt.Sprint(realCheckFall), "--default-rise", "1",
			}, m.args...)...)
			defer r.stopController()
			// The evidence, logged if the scenario fails (before the
			// controller's log, which stopController adds).
			w := r.watchHealth("local", created.Spec.HealthCheckNodePort)
			defer w.finish()
			r.eventually(m.name+" in the config", func() error { return contains(r.config(), m.want) })
			if m.checkPort != 0 {
				// What HAProxy runs, not only the file: a state file once
				// carried the previous scenario's check port (kube-proxy's
				// 10256) into this config, and n2 stayed DOWN.
				// The backend's HAProxy name asked each time: the pool's
				// file names its spare only once the controller wrote it.
				r.eventually(m.name+" checked on its port", func() error {
					return r.checksOn(r.haproxyBackend(fmt.Sprintf("be_%s_local_8003", ns)), m.checkPort)()
				})
			}
			r.eventually("both nodes serve", r.servedBy(addr, "local-n1", "local-n2"))
			n1 := r.tier.Node("n1")
			load := r.startSteadyLoad(addr)

			w.mark("stopping n1's kube-proxy")
			stopped := time.Now()
			n1.StopKubeProxy()
			r.leaves(addr, "local-n1", stopped, realCheckInter*realCheckFall+leaveSlack)
			w.mark("n1 left; starting n1's kube-proxy")
			if err := n1.StartKubeProxy(); err != nil {
				t.Fatal(err)
			}
			w.mark("n1's kube-proxy answers /healthz")
			r.eventually("n1 back after kube-proxy restarted", r.servedBy(addr, "local-n1", "local-n2"))
			w.mark("both serve; stopping n1's kubelet")

			stopped = time.Now()
			n1.StopKubelet()
			// Not Ready only after the grace period: the node check does
			// not see a stopped kubelet, the API does.
			r.leaves(addr, "local-n1", stopped, nodeGrace+10*time.Second)
			w.mark("n1 left; starting n1's kubelet")
			var total int
			var failed []string
			if m.checkPort == 0 {
				// Following its node, n1's server serves again as soon as
				// the EndpointSlice says n1's Pod is ready, and n1's
				// kube-proxy may program it seconds later (2.4-3.3 s
				// measured here): the node check (kube-proxy's /healthz)
				// cannot see that, so a connection sent then may be lost
				// (docs/health-checks.md). No load during that return.
				total, failed, _ = load.stop()
			}
			if err := n1.StartKubelet(); err != nil {
				t.Fatal(err)
			}
			r.eventuallyWithin(realNodeWait, "n1 back after kubelet restarted", r.servedBy(addr, "local-n1", "local-n2"))
			w.mark("both serve")

			if m.checkPort != 0 {
				total, failed, _ = load.stop()
			}
			t.Logf("%d connections, %d failed", total, len(failed))
			if len(failed) > 0 {
				t.Errorf("%d of %d connections failed, first: %v", len(failed), total, failed[:min(5, len(failed))])
			}
		})
	}
	if t.Failed() {
		return
	}
	t.Run("udp", func(t *testing.T) {
		r.t = t
		defer func() { r.t = parent }()
		r.udpThroughKubeProxy(t)
	})
}

// checksOn reports nil once every server of backend that points at a node
// is checked on port (srv_check_port in show servers state).
func (r *realNodeEnv) checksOn(backend string, port int32) func() error {
	return func() error {
		out, err := r.runtimeExec("show servers state " + backend)
		if err != nil {
			return err
		}
		lines := strings.Split(out[0], "\n")
		if len(lines) < 2 {
			return fmt.Errorf("show servers state %s: %q", backend, out[0])
		}
		cols := strings.Fields(strings.TrimPrefix(lines[1], "#"))
		idx := map[string]int{}
		for i, c := range cols {
			idx[c] = i
		}
		n := 0
		for _, l := range lines[2:] {
			f := strings.Fields(l)
			if len(f) < len(cols) || f[idx["srv_addr"]] == "127.0.0.1" { // a free slot
				continue
			}
			n++
			if got := f[idx["srv_check_port"]]; got != fmt.Sprint(port) {
				return fmt.Errorf("%s/%s (%s) checked on port %s, want %d", backend, f[idx["srv_name"]], f[idx["srv_addr"]], got, port)
			}
		}
		if n == 0 {
			return fmt.Errorf("%s: no server", backend)
		}
		return nil
	}
}

// servedBy reports nil once new connections to addr reach Pods of exactly
// the given Deployments (names are prefixes of Pod names): its own
// connections reach no other Pod, and every Deployment answered one of
// them or a connection of a steady load to addr dialled since.
//
// Its own connections alone do not show which servers serve while a
// steady load runs beside them: HAProxy's round robin alternates over the
// connections of both clients, and two sequential clients that happen to
// go in step (picks A, B, A, B, ...) each get the same server every time;
// under a Local Service a Pod answers only connections sent to its own
// node, so nothing downstream mixes them again. Measured on this tier with
// both servers UP and their checks passing: 1 of 150 and 1 of 300 rounds
// of 16 connections all answered by one node while the load's connections
// of the same round reached the other; and leaves' rounds of 10 passed
// while n1 still served in 7 of 28 kubelet stops (n1 "left" 0.13-4.3 s
// after, before the 6 s grace could take it out).
func (r *realNodeEnv) servedBy(addr string, deps ...string) func() error {
	return func() error {
		begin := time.Now()
		seen := map[string]bool{}
		var order []string
		for range 8 * len(deps) {
			name, err := r.hostname(addr)
			if err != nil {
				return err
			}
			dep := depOf(name, deps)
			if dep == "" {
				return fmt.Errorf("answered by %s, not a Pod of %v", name, deps)
			}
			seen[dep] = true
			order = append(order, dep)
		}
		loads := r.answeredSince(addr, begin)
		for _, name := range loads {
			if dep := depOf(name, deps); dep != "" {
				seen[dep] = true
			}
		}
		if len(seen) != len(deps) {
			return fmt.Errorf("answered by %v (in turn: %v; the steady load's since: %v), want all of %v", seen, order, loads, deps)
		}
		return nil
	}
}

func depOf(pod string, deps []string) string {
	for _, d := range deps {
		if strings.HasPrefix(pod, d+"-") {
			return d
		}
	}
	return ""
}

// leaves waits until new connections to addr no longer reach the Pods of
// dep (neither its own nor a steady load's dialled since it began: see
// servedBy), and fails unless that happened within limit of since.
func (r *realNodeEnv) leaves(addr, dep string, since time.Time, limit time.Duration) {
	r.t.Helper()
	err := waitUntil(limit+realNodeWait/4, func() error {
		begin := time.Now()
		for range 10 {
			name, err := r.hostname(addr)
			if err != nil {
				return err
			}
			if strings.HasPrefix(name, dep+"-") {
				return fmt.Errorf("still answered by %s", name)
			}
		}
		for _, name := range r.answeredSince(addr, begin) {
			if strings.HasPrefix(name, dep+"-") {
				return fmt.Errorf("still answered by %s (the steady load)", name)
			}
		}
		return nil
	})
	took := time.Since(since)
	r.t.Logf("%s left after %v (limit %v)", dep, took.Round(10*time.Millisecond), limit)
	if err != nil {
		r.t.Fatalf("%s did not leave: %v\n%s", dep, err, r.statReport())
	}
	if took > limit {
		r.t.Errorf("%s left after %v, want within %v", dep, took, limit)
	}
}

func (r *realNodeEnv) eventuallyWithin(d time.Duration, what string, cond func() error) {
	r.t.Helper()
	if err := waitUntil(d, cond); err != nil {
		r.t.Fatalf("%s: %v\n%s\n%s", what, err, r.statReport(), r.podReport())
	}
}

// statReport is HAProxy's view of the servers, for failure messages.
func (r *realNodeEnv) statReport() string {
	rows, err := r.statRows()
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, row := range rows {
		fmt.Fprintf(&b, "%s/%s %s lastchg=%ss chkfail=%s chkdown=%s downtime=%ss\n", row["pxname"], row["svname"], row.checkSummary(),
			row["lastchg"], row["chkfail"], row["chkdown"], row["downtime"])
	}
	nodesList, err := r.client.CoreV1().Nodes().List(bg, metav1.ListOptions{})
	if err == nil {
		for _, n := range nodesList.Items {
			fmt.Fprintf(&b, "node %s ready=%v\n", n.Name, nodes.IsReady(&n))
		}
	}
	return b.String()
}
