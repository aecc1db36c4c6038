package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/nodes"
)

// TestRealNodeServing runs, on one tier of real nodes (Deployments web-n1
// and web-n2 of agnhost netexec, two Pods each; Service web-cluster on 8001
// and web-local, Local, on 8002), one controller after the other:
//
//   - rolling-update: a rollout under steady load (rollingUpdate);
//   - exclude-label: the exclude-from-external-load-balancers label on n1
//     drains it: a connection established through n1 keeps working, new
//     connections go to n2 only; without the label n1 serves again;
//   - scale-to-zero: both Deployments scaled to 0 leave an empty backend
//     that refuses at once (no hang); scaled back to 2 they are served
//     again, with no reload;
//   - targets-pods: with --targets=pods the servers are the real, routed Pod
//     IPs; a rollout under load fails no connection.
func TestRealNodeServing(t *testing.T) {
	r := newRealNodeEnv(t)
	deps := []string{"web-n1", "web-n2"}
	for i, d := range deps {
		r.createDeployment(webApp(d, "web", r.tier.Nodes[i].Name, 2))
	}
	r.createService(webService("web-cluster", "web", 8001, corev1.ServiceExternalTrafficPolicyCluster))
	r.createService(webService("web-local", "web", 8002, corev1.ServiceExternalTrafficPolicyLocal))
	r.waitRolledOut(deps...)
	cluster, local := r.serviceAddr(8001), r.serviceAddr(8002)
	parent := r.t

	t.Run("rolling-update", func(t *testing.T) {
		r.t = t
		defer func() { r.t = parent }()
		r.rollingUpdate(t, deps)
	})
	if t.Failed() {
		return
	}

	t.Run("exclude-label", func(t *testing.T) {
		r.t = t
		defer func() { r.t = parent }()
		r.startController()
		defer r.stopController()
		r.eventually("both nodes serve", r.servedBy(local, deps...))
		kc := r.keepAliveThrough(local, "web-n1")
		defer kc.Close()
		if err := lab.SetNodeExcluded(bg, r.client, "n1", true); err != nil {
			t.Fatal(err)
		}
		r.eventually("n1 drained", r.servedBy(local, "web-n2"))
		r.eventually("cluster port off n1 too", func() error { return notServedBy(r, cluster, "198.18.0.11") })
		if got, err := kc.ask(); err != nil || got != kc.pod {
			t.Errorf("established connection through n1: answered by %q (%v), want %s", got, err, kc.pod)
		}
		if err := lab.SetNodeExcluded(bg, r.client, "n1", false); err != nil {
			t.Fatal(err)
		}
		r.eventually("n1 back", r.servedBy(local, deps...))
	})
	if t.Failed() {
		return
	}

	t.Run("scale-to-zero", func(t *testing.T) {
		r.t = t
		defer func() { r.t = parent }()
		r.startController()
		defer r.stopController()
		r.eventually("served", r.servedBy(cluster, deps...))
		reloads := r.reloads()
		for _, d := range deps {
			if err := lab.ScaleDeployment(bg, r.client, ns, d, 0); err != nil {
				t.Fatal(err)
			}
		}
		r.waitRolledOut(deps...)
		for _, addr := range []string{cluster, local} {
			r.eventually("empty backend refuses "+addr, func() error {
				begin := time.Now()
				name, err := r.hostname(addr)
				if err == nil {
					return fmt.Errorf("still answered by %s", name)
				}
				if d := time.Since(begin); d > time.Second {
					return fmt.Errorf("refused only after %v: %v", d, err)
				}
				return nil
			})
		}
		for _, d := range deps {
			if err := lab.ScaleDeployment(bg, r.client, ns, d, 2); err != nil {
				t.Fatal(err)
			}
		}
		r.waitRolledOut(deps...)
		r.eventually("served again (Cluster)", r.servedBy(cluster, deps...))
		r.eventually("served again (Local)", r.servedBy(local, deps...))
		if got := r.reloads(); got != reloads {
			t.Errorf("HAProxy reloaded %d times while scaling to 0 and back, want 0", got-reloads)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("targets-pods", func(t *testing.T) {
		r.t = t
		defer func() { r.t = parent }()
		r.startController("--targets", "pods")
		defer r.stopController()
		r.eventually("Pod IPs are the servers", func() error { return contains(r.config(), " 198.19.") })
		r.eventually("served", r.servedBy(cluster, deps...))
		reloads := r.reloads()
		old := r.podNames("web")
		load := r.startSteadyLoad(cluster)
		r.restart(deps...)
		r.waitRolledOut(deps...)
		now := r.podNames("web")
		r.eventually("new Pods answer", func() error {
			name, err := r.hostname(cluster)
			if err == nil && !now[name] {
				return fmt.Errorf("answered by %s, not a new Pod", name)
			}
			return err
		})
		total, failed, seen := load.stop()
		var fromOld, fromNew int
		for name, n := range seen {
			if old[name] {
				fromOld += n
			} else if now[name] {
				fromNew += n
			}
		}
		t.Logf("%d connections, %d failed, %d answered by old Pods, %d by new, %d reloads", total, len(failed), fromOld, fromNew, r.reloads()-reloads)
		if len(failed) > 0 {
			t.Errorf("%d of %d connections failed, first: %v", len(failed), total, failed[:min(5, len(failed))])
		}
		if fromOld == 0 || fromNew == 0 {
			t.Errorf("want answers from old and new Pods, got %d and %d", fromOld, fromNew)
		}
	})
}

// notServedBy reports nil when HAProxy's servers of the frontend's backend
// no longer list addr as an up server.
func notServedBy(r *realNodeEnv, frontend, addr string) error {
	stat := r.statReport()
	port := frontend[strings.LastIndex(frontend, ":")+1:]
	for _, l := range strings.Split(stat, "\n") {
		if strings.Contains(l, "_"+port+"/") && strings.Contains(l, " "+addr+" ") && strings.Contains(l, " UP") {
			return fmt.Errorf("still up: %s", l)
		}
	}
	return nil
}

// keepAlive is an HTTP/1.1 connection through HAProxy (TCP mode) to one
// Pod, kept open between requests.
type keepAlive struct {
	net.Conn
	br  *bufio.Reader
	pod string
}

// keepAliveThrough opens connections to addr from the load balancer's
// namespace until one is answered by a Pod of dep, and keeps it.
func (r *realNodeEnv) keepAliveThrough(addr, dep string) *keepAlive {
	r.t.Helper()
	for range 50 {
		var c net.Conn
		err := nodes.InNS(r.tier.LB, func() (err error) {
			c, err = net.DialTimeout("tcp", addr, 2*time.Second)
			return err
		})
		if err != nil {
			r.t.Fatal(err)
		}
		k := &keepAlive{Conn: c, br: bufio.NewReader(c)}
		pod, err := k.ask()
		if err == nil && strings.HasPrefix(pod, dep+"-") {
			k.pod = pod
			return k
		}
		c.Close()
	}
	r.t.Fatalf("no connection to %s reached a Pod of %s", addr, dep)
	return nil
}

// ask sends GET /hostname on the open connection.
func (k *keepAlive) ask() (string, error) {
	_ = k.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.WriteString(k, "GET /hostname HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(k.br, nil)
	if err != nil {
		return "", err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return "", err
	}
	if resp.Close {
		return "", fmt.Errorf("server closed the connection")
	}
	return strings.TrimSpace(string(body)), nil
}
