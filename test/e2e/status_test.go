package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/lab"
)

// ingress returns nil once the Service's .status.loadBalancer.ingress is
// exactly ips, each with ipMode Proxy (none: cleared).
func (e *env) ingress(svc string, ips ...string) func() error {
	return func() error {
		s, err := e.client.CoreV1().Services(ns).Get(bg, svc, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var got []string
		for _, i := range s.Status.LoadBalancer.Ingress {
			mode := "<nil>"
			if i.IPMode != nil {
				mode = string(*i.IPMode)
			}
			got = append(got, i.IP+"/"+mode)
		}
		var want []string
		for _, ip := range ips {
			want = append(want, ip+"/Proxy")
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			return fmt.Errorf("%s: ingress %v, want %v", svc, got, want)
		}
		return nil
	}
}

func (e *env) updateService(name string, mutate func(*corev1.Service)) {
	e.t.Helper()
	s, err := e.client.CoreV1().Services(ns).Get(bg, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	mutate(s)
	if _, err := e.client.CoreV1().Services(ns).Update(bg, s, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// With the token of deploy/services/rbac.yaml's ServiceAccount, --publish-address
// writes the addresses with ipMode Proxy into the status of the
// LoadBalancer Services served, clears them when a Service stops being
// ours (annotation removed, type changed), and leaves another load
// balancer's status alone.
func TestStatusWrittenAndClearedWithShippedRBAC(t *testing.T) {
	e := newEnv(t)
	np := e.threeNodes()
	portA, portB := int32(haproxytest.FreePort(t)), int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "classy", Port: portA, NodePort: np})
	lb := func(name string, class *string, port, nodePort int32, ann map[string]string) *corev1.Service {
		s, err := e.client.CoreV1().Services(ns).Create(bg, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: class,
				Ports: []corev1.ServicePort{{Port: port, NodePort: nodePort, Protocol: corev1.ProtocolTCP}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Class-less, taken through the annotation.
	lb("annotated", nil, portB, np+1, map[string]string{settings.EnabledAnnotation: "true"})
	// Another load balancer's Service, with its own status.
	other := "other.example/lb"
	foreign := lb("foreign", &other, 80, np+2, nil)
	foreign.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.7"}}
	if _, err := e.client.CoreV1().Services(ns).UpdateStatus(bg, foreign, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.startController(e.withRole(e.rbacTokenFile(), "--class-less=false", "--publish-address", "192.0.2.10,2001:db8::10")...)
	e.eventually("classy serves", serves(portA, "n1", "n2", "n3"))
	e.eventually("status of classy", e.ingress("classy", "192.0.2.10", "2001:db8::10"))
	e.eventually("status of annotated", e.ingress("annotated", "192.0.2.10", "2001:db8::10"))

	e.updateService("annotated", func(s *corev1.Service) { delete(s.Annotations, settings.EnabledAnnotation) })
	e.eventually("annotation removed: status cleared", e.ingress("annotated"))
	e.updateService("classy", func(s *corev1.Service) {
		s.Spec.Type, s.Spec.LoadBalancerClass = corev1.ServiceTypeNodePort, nil
	})
	e.eventually("type changed: status cleared", e.ingress("classy"))
	e.eventually("classy no longer served", serves(portA))

	got, err := e.client.CoreV1().Services(ns).Get(bg, "foreign", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ing := got.Status.LoadBalancer.Ingress; len(ing) != 1 || ing[0].IP != "198.51.100.7" {
		t.Errorf("another load balancer's status changed: %+v", ing)
	}
	if strings.Contains(e.ctlLog.String(), "forbidden") {
		t.Errorf("a request was forbidden with the shipped RBAC:\n%s", e.ctlLog.String())
	}
}

// replica is a second controller with its own HAProxy, against the same
// apiserver.
type replica struct {
	cancel context.CancelFunc
	done   chan error
	log    *haproxytest.LockedBuffer
}

func (e *env) startReplica(bind string, extra ...string) *replica {
	e.t.Helper()
	dir := e.t.TempDir()
	cfg := initHAProxy(e.t, dir)
	hap := haproxytest.Start(e.t, dir, cfg)
	args := append([]string{
		"--haproxy-config", cfg, "--haproxy-bin", haproxytest.Bin(),
		"--master-socket", hap.MasterSocket, "--stats-socket", hap.StatsSocket,
		"--state-file", filepath.Join(dir, "state"), "--bind-address", bind, "--listeners=ports",
		"--resync-period", "3s", "--min-reload-interval", "100ms", "--persist-interval", "50ms", "--log-level", "debug",
	}, extra...)
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{cancel: cancel, done: make(chan error, 1), log: &haproxytest.LockedBuffer{}}
	go func() { r.done <- cli.Run(ctx, args, func(string) string { return "" }, r.log) }()
	e.t.Cleanup(func() {
		r.stop(e.t)
		if e.t.Failed() {
			e.t.Logf("replica log:\n%s", r.log.String())
		}
	})
	return r
}

func (r *replica) stop(t *testing.T) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case <-r.done:
	case <-t.Context().Done():
	}
}

// servesAt is serves on another frontend address.
func servesAt(addr string, port int32, want ...string) func() error {
	return func() error {
		name, err := lab.Probe(fmt.Sprintf("%s:%d", addr, port), 1e9)
		if err != nil {
			return err
		}
		for _, w := range want {
			if name == w {
				return nil
			}
		}
		return fmt.Errorf("served by %s, want one of %v", name, want)
	}
}

// Two replicas with the shipped RBAC: both drive their own HAProxy, only
// the leader writes status; when it stops, the other takes over. Each
// publishes a different address here, so the status tells who wrote it.
func TestLeaderElectionHandsOverStatus(t *testing.T) {
	e := newEnv(t)
	np := e.threeNodes()
	port := int32(haproxytest.FreePort(t))
	e.createService(lab.Service{Namespace: ns, Name: "web", Port: port, NodePort: np})
	token := e.rbacTokenFile()
	elect := e.withRole(token, "--leader-elect", "--leader-election-lease-duration", "2s", "--leader-election-renew-deadline", "1s",
		"--leader-election-retry-period", "200ms")
	e.startController(append(elect, "--publish-address", "192.0.2.1")...)
	e.eventually("first replica serves", serves(port, "n1", "n2", "n3"))
	e.eventually("first replica leads and writes", e.ingress("web", "192.0.2.1"))

	second := e.startReplica("127.86.0.2", append(elect, "--publish-address", "192.0.2.2")...)
	e.eventually("second replica drives its own HAProxy", servesAt("127.86.0.2", port, "n1", "n2", "n3"))
	e.eventually("second replica sees the leader", func() error { return contains(second.log.String(), "leader elected") })
	if err := e.ingress("web", "192.0.2.1")(); err != nil {
		t.Fatalf("a replica that does not lead wrote status: %v", err)
	}

	e.stopController()
	e.eventually("second replica takes over", e.ingress("web", "192.0.2.2"))
	e.eventually("second replica still serves", servesAt("127.86.0.2", port, "n1", "n2", "n3"))
}
