package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// inUse returns nil once the backend's running servers, read
// through the stats socket (a connection per read: a reload starts a new
// worker), are exactly the addresses want.
func inUse(socket, backend string, want ...string) func() error {
	return func() error {
		rt := haproxy.NewRuntime(socket)
		defer rt.Close()
		out, err := rt.Exec(bg, []string{"show servers state " + backend})
		if err != nil {
			return err
		}
		var got []string
		for _, l := range strings.Split(out[0], "\n") {
			f := strings.Fields(l)
			if len(f) < 7 || strings.HasPrefix(l, "#") {
				continue
			}
			if f[5] != "2" { // srv_op_state: 2 is running (up)
				continue
			}
			got = append(got, f[4])
		}
		slices.Sort(got)
		w := slices.Clone(want)
		slices.Sort(w)
		if !slices.Equal(got, w) {
			return fmt.Errorf("%s in use: %v, want %v\n%s", backend, got, w, out[0])
		}
		return nil
	}
}

// One controller, two HAProxy instances (--instance twice). One is killed
// while endpoints keep moving: the other follows every change; the killed
// one, started again, converges on the newest state.
func TestInstanceDownDoesNotHoldUpOthers(t *testing.T) {
	e := newEnv(t)
	np := e.threeNodes()
	// The second HAProxy: its own files and sockets.
	dirB := t.TempDir()
	cfgB := initHAProxy(t, dirB)
	hapB := haproxytest.Start(t, dirB, cfgB)
	t.Cleanup(func() {
		if t.Failed() {
			ents, _ := os.ReadDir(dirB)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			ctx, cancel := context.WithTimeout(bg, 2*time.Second)
			defer cancel()
			p, err := haproxy.NewMaster(hapB.MasterSocket).ShowProc(ctx)
			t.Logf("HAProxy b (files %v; show proc %+v %v):\n%s", names, p, err, hapB.Output())
		}
	})

	port := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "web", Port: port, NodePort: np, Local: true})
	e.setEndpoints("web", pod(1, "n1"))
	maddr := instancesMetricsAddr(t)
	e.startController("--instance", localInstance("b", dirB, hapB), "--instance", localInstance("a", e.dir, e.hap), "--metrics-address", maddr)
	m := &scraper{url: "http://" + maddr + "/metrics"}
	be := fmt.Sprintf("be_default_web_%d", port)
	addr := func(i int) string { return fmt.Sprintf("127.%d.0.%d", e.subnet, i) }
	e.eventually("instance a serves n1", inUse(e.hap.StatsSocket, be, addr(1)))
	e.eventually("instance b serves n1", inUse(hapB.StatsSocket, be, addr(1)))

	pass := func(inst, outcome string) string {
		return fmt.Sprintf(`haproxy_k8s_sync_pass_duration_seconds{driver="haproxy/%s",outcome="%s"}`, inst, outcome)
	}
	e.eventually("instance a's own series", m.atLeast(pass("a", "applied"), 1))
	e.eventually("instance b's own series", m.atLeast(pass("b", "applied"), 1))
	okA := m.value(t, pass("a", "applied"))

	hapB.Kill(t)
	steps := []struct {
		eps  []lab.Endpoint
		want []string
	}{
		{[]lab.Endpoint{pod(1, "n1"), pod(2, "n2")}, []string{addr(1), addr(2)}},
		{[]lab.Endpoint{pod(2, "n2"), pod(3, "n3")}, []string{addr(2), addr(3)}},
		{[]lab.Endpoint{pod(3, "n3")}, []string{addr(3)}},
	}
	for i, s := range steps {
		start := time.Now()
		e.setEndpoints("web", s.eps...)
		e.eventually(fmt.Sprintf("step %d: instance a follows while b is down", i), inUse(e.hap.StatsSocket, be, s.want...))
		t.Logf("step %d: instance a followed in %v with b down", i, time.Since(start).Round(time.Millisecond))
	}
	// /readyz: not ready while b neither applies nor answers.
	e.eventually("/readyz 503 while b is down", httpStatus("http://"+maddr+"/readyz", 503))
	// The failures are b's alone: counted under its label, not a's.
	e.eventually("b's failed attempts counted under b", m.atLeast(pass("b", "error"), 1))
	e.eventually("b's retries in its own workqueue", m.atLeast(`haproxy_k8s_sync_workqueue_retries_total{name="instance-b"}`, 1))
	if v := m.value(t, `haproxy_k8s_sync_workqueue_retries_total{name="instance-a"}`); v != 0 {
		t.Errorf("instance a's workqueue retried %v times while only b was down", v)
	}
	if v := m.value(t, pass("a", "error")); v != 0 {
		t.Errorf("instance a counted %v failed attempts while only b was down", v)
	}
	if v := m.value(t, pass("a", "applied")); v <= okA {
		t.Errorf("instance a's applied attempts did not move (%v, before b went down %v)", v, okA)
	}
	hapB.Restart(t)
	// b may have been killed while the controller waited for its reload
	// to be confirmed: that attempt fails only at the master CLI's
	// timeouts (10 s each), then b's own retry applies the newest model.
	deadline := time.Now().Add(60 * time.Second)
	for err := inUse(hapB.StatsSocket, be, addr(3))(); err != nil; err = inUse(hapB.StatsSocket, be, addr(3))() {
		if time.Now().After(deadline) {
			t.Fatalf("instance b did not converge within 60s of its return: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // poll interval
	}
	e.eventually("/readyz 200 once b is back", httpStatus("http://"+maddr+"/readyz", 200))
	if !strings.Contains(e.ctlLog.String(), "instance=b") {
		t.Error("the failures of instance b were not logged under its name")
	}
}

// instancesMetricsAddr is a free address for the controller's metrics in
// this test's loopback range.
func instancesMetricsAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", fmt.Sprintf("127.88.%d.%d:0", rand.IntN(250)+1, rand.IntN(250)+1))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
