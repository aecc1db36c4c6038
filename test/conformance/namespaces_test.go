package conformance

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// waitNamespacesGone waits until no Namespace is terminating. Tests
// whose manifests create Namespaces (the ListenerSet tests do) delete
// them when they end, and the namespace controller takes a while: the
// next HAProxy's run applies the same manifests, and a Namespace still
// terminating refuses them ("unable to create new content in namespace
// ... because it is being terminated").
func waitNamespacesGone(ctx context.Context, t *testing.T, cfg *rest.Config) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := waitUntil(3*time.Minute, func() error {
		list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var terminating []string
		for _, n := range list.Items {
			if n.Status.Phase == corev1.NamespaceTerminating {
				terminating = append(terminating, n.Name)
			}
		}
		if len(terminating) > 0 {
			return fmt.Errorf("namespaces still terminating: %s", strings.Join(terminating, ", "))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("conformance: the last run's namespaces gone after %v", time.Since(start).Round(time.Millisecond))
}
