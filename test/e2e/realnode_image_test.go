package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/nodes"
)

// The chart's test image (hack/testbin.sh controller-images.tar, built by
// hack/image/testimage from the static controller and the HAProxy 3.0 root
// file system) imports into the real-node tier and runs, as the chart's
// user, each command the chart's containers run: the controller, haproxy
// (with its own libraries) and the preStop's sleep.
func TestRealNodeControllerImage(t *testing.T) {
	tier := nodes.Start(t, nodes.Options{Images: []string{"controller-images.tar"}})
	user, never := int64(99), false
	run := func(name string, cmd ...string) corev1.Container {
		return corev1.Container{Name: name, Image: nodes.ControllerImage, ImagePullPolicy: corev1.PullNever, Command: cmd,
			SecurityContext: &corev1.SecurityContext{RunAsUser: &user, RunAsGroup: &user, AllowPrivilegeEscalation: &never,
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "controller-image"},
		Spec: corev1.PodSpec{
			NodeName:                     tier.Nodes[0].Name,
			RestartPolicy:                corev1.RestartPolicyNever,
			AutomountServiceAccountToken: &never,
			Containers: []corev1.Container{
				run("sync", "haproxy-k8s-sync", "version"),
				run("haproxy", "haproxy", "-vv"),
				run("sleep", "sleep", "0"),
			},
		},
	}
	if _, err := tier.Client.CoreV1().Pods(ns).Create(bg, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last *corev1.Pod
	err := waitUntil(realNodeWait, func() error {
		p, err := tier.Client.CoreV1().Pods(ns).Get(bg, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		last = p
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("the Pod did not end within %s: %v\n%s", realNodeWait, err, tier.LogTail(40))
	}
	for _, c := range last.Status.ContainerStatuses {
		term := c.State.Terminated
		switch {
		case term == nil:
			t.Errorf("%s: not terminated: %+v", c.Name, c.State)
		case term.ExitCode != 0:
			t.Errorf("%s: exit %d (%s: %s)", c.Name, term.ExitCode, term.Reason, term.Message)
		}
	}
	if last.Status.Phase != corev1.PodSucceeded {
		t.Errorf("phase %s, want Succeeded", last.Status.Phase)
	}
	if !t.Failed() {
		t.Logf("the chart's image ran its three commands; Pod ended %s after creation",
			time.Since(last.CreationTimestamp.Time).Round(time.Second))
	}
}
