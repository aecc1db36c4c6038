package kubeapi

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/gwcrd"
)

// Reset brings the cluster back to its Baseline: what was made since is
// gone (a namespace with a Service, a Node, CRDs and their group, a
// Lease), what was
// changed (a label) or deleted (a bootstrap ClusterRole) is back, and the
// same ClusterIP and NodePort can be taken again (the allocators' state
// came back too); twice, as a run of tests sharing the server would.
func TestReset(t *testing.T) {
	s := Start(t)
	c := s.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := s.Baseline(ctx); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for i, ns := range []string{"default", "t1"} {
			spec := corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}
			if i == 0 {
				spec.ClusterIP, spec.Ports[0].NodePort = "10.0.0.50", 30080
			}
			if _, err := c.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: spec}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("round %d: Service %s/web: %v", round, ns, err)
			}
		}
		if _, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		gwcrd.Install(t, s.Config)
		// A controller's leader election: the next test's starts afresh.
		holder := "replica-1"
		if _, err := c.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "haproxy-k8s-sync"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("round %d: Lease: %v", round, err)
		}
		def, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		def.Labels = map[string]string{"changed": "yes"}
		if _, err := c.CoreV1().Namespaces().Update(ctx, def, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := c.RbacV1().ClusterRoles().Delete(ctx, "view", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}

		begin := time.Now()
		deleted, restored, err := s.Reset(ctx)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		t.Logf("round %d: %d keys deleted, %d put back, caches caught up, in %v", round, deleted, restored, time.Since(begin).Round(time.Millisecond))

		// The caches answer at once: no list below waits.
		svcs, err := c.CoreV1().Services("").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil || len(svcs.Items) != 1 || svcs.Items[0].Name != "kubernetes" {
			t.Errorf("round %d: Services after Reset: %d (%v), want default/kubernetes alone", round, len(svcs.Items), err)
		}
		if _, err := c.CoreV1().Namespaces().Get(ctx, "t1", metav1.GetOptions{ResourceVersion: "0"}); !apierrors.IsNotFound(err) {
			t.Errorf("round %d: namespace t1 after Reset: %v, want not found", round, err)
		}
		if nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err != nil || len(nodes.Items) != 0 {
			t.Errorf("round %d: Nodes after Reset: %d (%v), want none", round, len(nodes.Items), err)
		}
		if _, err := c.Discovery().ServerResourcesForGroupVersion("gateway.networking.k8s.io/v1"); !apierrors.IsNotFound(err) {
			t.Errorf("round %d: the Gateway API after Reset: %v, want not served", round, err)
		}
		if _, err := c.CoordinationV1().Leases("default").Get(ctx, "haproxy-k8s-sync", metav1.GetOptions{ResourceVersion: "0"}); !apierrors.IsNotFound(err) {
			t.Errorf("round %d: the leader election's Lease after Reset: %v, want not found", round, err)
		}
		if def, err := c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil || def.Labels["changed"] != "" {
			t.Errorf("round %d: default's labels after Reset: %v (%v), want the baseline's", round, def.Labels, err)
		}
		if _, err := c.RbacV1().ClusterRoles().Get(ctx, "view", metav1.GetOptions{}); err != nil {
			t.Errorf("round %d: ClusterRole view after Reset: %v, want it back", round, err)
		}
	}
}
