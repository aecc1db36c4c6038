package e2e

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// programmed is nil once Gateway name is Programmed=True for its
// generation.
func (g *gwEnv) programmed(name string) func() error {
	return func() error {
		gw, err := g.gw.GatewayV1().Gateways(ns).Get(bg, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c := meta.FindStatusCondition(gw.Status.Conditions, "Programmed"); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != gw.Generation {
			return fmt.Errorf("Gateway %s: Programmed %+v", name, c)
		}
		return nil
	}
}

// The gateway mode on two HAProxy instances (--instance twice): both
// serve every Gateway; with one down, the other follows and the new
// Gateway's status waits (Programmed only once every instance applied
// it); back, it catches up and the status follows. A Data Plane API
// instance is refused at start.
func TestGatewayInstances(t *testing.T) {
	g := newGatewayEnv(t)
	dirB := t.TempDir()
	cfgB := initHAProxy(t, dirB)
	hapB := haproxytest.Start(t, dirB, cfgB)
	// Endpoints only (nothing is dialled): the servers' state is read
	// through each instance's stats socket.
	for i, svc := range []string{"pod-a", "pod-b"} {
		if _, err := g.client.CoreV1().Services(ns).Create(bg, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svc},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "tcp", Port: 80, Protocol: corev1.ProtocolTCP}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := lab.ApplySlice(bg, g.client, lab.SliceFor(ns, svc, 8080, []lab.Endpoint{{IP: podAddrs[i], Node: "n1", Ready: true}})); err != nil {
			t.Fatal(err)
		}
	}
	g.gatewayOn("one", haproxytest.FreePort(t), "pod-a")
	// Refused: a Data Plane API instance.
	args := []string{"--mode=gateway", "--kubeconfig", g.kube.KubeconfigPath, "--instance", "name=dp,dataplane-url=http://127.0.0.1:1"}
	var stderr strings.Builder
	if err := cli.Run(bg, args, func(string) string { return "" }, &stderr); err == nil || !strings.Contains(err.Error(), "cannot serve Gateway routes") {
		t.Errorf("a Data Plane API instance: %v", err)
	}

	g.startController("--mode=gateway", "--instance", localInstance("a", g.dir, g.hap), "--instance", localInstance("b", dirB, hapB))
	for _, s := range []string{g.hap.StatsSocket, hapB.StatsSocket} {
		g.eventually("one's backend on "+s, inUse(s, "gwt_default_pod-a_80", podAddrs[0]))
	}
	g.eventually("one Programmed", g.programmed("one"))

	hapB.Kill(t)
	g.gatewayOn("two", haproxytest.FreePort(t), "pod-b")
	g.eventually("a serves two", inUse(g.hap.StatsSocket, "gwt_default_pod-b_80", podAddrs[1]))
	if err := g.programmed("two")(); err == nil {
		t.Errorf("two Programmed while instance b is down")
	}
	hapB.Restart(t)
	g.eventually("b serves two", inUse(hapB.StatsSocket, "gwt_default_pod-b_80", podAddrs[1]))
	g.eventually("two Programmed once both applied it", g.programmed("two"))
}
