package kubeapi

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// TestControllers runs the cluster of Options.Controllers: kwok makes a
// Node Ready (but not one annotated kwok.x-k8s.io/status=custom), a
// Deployment makes a Pod that kwok makes Ready, and the endpoint-slice
// controller writes its EndpointSlice; deleting the Service collects the
// slice (garbage collector).
func TestControllers(t *testing.T) {
	begin := time.Now()
	s := StartWithOptions(t, Options{Controllers: true})
	c := s.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Logf("cluster ready in %v", time.Since(begin).Round(time.Millisecond))

	for name, custom := range map[string]bool{"kwok-a": false, "kwok-custom": true} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if custom {
			n.Annotations = map[string]string{KwokCustomAnnotation: "custom"}
		}
		if _, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	one := int32(1)
	labels := map[string]string{"app": "echo"}
	_, err := c.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				NodeName:   "kwok-a",
				Containers: []corev1.Container{{Name: "echo", Image: "fake.invalid/echo", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}}}},
			}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := c.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromString("web"), Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	poll(ctx, t, "kwok-a Ready", func() error { return nodeReady(ctx, c, "kwok-a", true) })
	poll(ctx, t, "a ready endpoint of echo on kwok-a", func() error {
		l, err := c.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=echo"})
		if err != nil {
			return err
		}
		for _, sl := range l.Items {
			for _, e := range sl.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready && e.NodeName != nil && *e.NodeName == "kwok-a" &&
					len(sl.Ports) == 1 && *sl.Ports[0].Port == 8080 {
					return nil
				}
			}
		}
		return fmt.Errorf("not yet: %d slices", len(l.Items))
	})
	// kwok has seen kwok-custom as long as kwok-a: it left it alone.
	if err := nodeReady(ctx, c, "kwok-custom", false); err != nil {
		t.Error(err)
	}

	if err := c.CoreV1().Services("default").Delete(ctx, svc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(ctx, t, "echo's slices collected", func() error {
		l, err := c.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=echo"})
		if err == nil && len(l.Items) > 0 {
			err = fmt.Errorf("%d slices left", len(l.Items))
		}
		return err
	})
}

func nodeReady(ctx context.Context, c kubernetes.Interface, name string, want bool) error {
	n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	ready := false
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			ready = cond.Status == corev1.ConditionTrue
		}
	}
	if ready != want {
		return fmt.Errorf("node %s Ready=%v, want %v", name, ready, want)
	}
	return nil
}

// poll runs cond until it returns nil or ctx ends.
func poll(ctx context.Context, t *testing.T, what string, cond func() error) {
	t.Helper()
	for {
		err := cond()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, err)
		case <-time.After(pollInterval):
		}
	}
}
