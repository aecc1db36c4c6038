package lab

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// For clusters where kube-controller-manager and kwok run
// (kubeapi.Options.Controllers): kwok makes Nodes and Pods Ready, the real
// controllers make Pods of Deployments and their EndpointSlices.

// HoldFinalizer keeps a deleted Pod terminating (its endpoint serving and
// terminating) until a test removes it with Release.
const HoldFinalizer = "lab.haproxy-k8s-sync.test/hold"

// CreateKwokNode creates a Node with InternalIP ip, which kwok makes Ready.
// The status is written after kwok may have written it first, so it is
// retried on conflicts.
func CreateKwokNode(ctx context.Context, c kubernetes.Interface, name, ip string) error {
	_, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{corev1.LabelHostname: name}}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}}
		_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// Deployment describes a Deployment whose Pods all run on one node (no
// scheduler runs: the template names the node) with one container.
type Deployment struct {
	Namespace, Name string
	App             string // the "app" label its Pods carry (Services select it)
	Node            string
	Replicas        int32
	Ports           []corev1.ContainerPort
	Hold            bool // Pods carry HoldFinalizer: deleted ones stay terminating
}

// CreateDeployment creates d.
func CreateDeployment(ctx context.Context, c kubernetes.Interface, d Deployment) error {
	labels := map[string]string{"app": d.App, "deployment": d.Name}
	pod := metav1.ObjectMeta{Labels: labels}
	if d.Hold {
		pod.Finalizers = []string{HoldFinalizer}
	}
	grace := int64(0)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &d.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: pod,
				Spec: corev1.PodSpec{
					NodeName:                      d.Node,
					TerminationGracePeriodSeconds: &grace,
					Containers:                    []corev1.Container{{Name: "app", Image: "fake.invalid/app", Ports: d.Ports}},
				},
			},
		},
	}
	_, err := c.AppsV1().Deployments(d.Namespace).Create(ctx, dep, metav1.CreateOptions{})
	return err
}

// ScaleDeployment sets the replicas of a Deployment.
func ScaleDeployment(ctx context.Context, c kubernetes.Interface, namespace, name string, replicas int32) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := c.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Replicas = &replicas
		_, err = c.AppsV1().Deployments(namespace).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
}

// Release removes HoldFinalizer from every Pod of the namespace that has
// it, so terminating Pods go away.
func Release(ctx context.Context, c kubernetes.Interface, namespace string) error {
	pods, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		var keep []string
		for _, f := range p.Finalizers {
			if f != HoldFinalizer {
				keep = append(keep, f)
			}
		}
		if len(keep) == len(p.Finalizers) {
			continue
		}
		p.Finalizers = keep
		if _, err := c.CoreV1().Pods(namespace).Update(ctx, &p, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}
