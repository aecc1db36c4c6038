package e2e

import (
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
)

// The shipped DaemonSet is one the apiserver accepts (a server-side dry
// run validates it fully: containers, env from resource fields, volumes).
func TestDeployDaemonSetIsValid(t *testing.T) {
	kube := kubeapi.Start(t)
	client := kube.Client(t)
	raw, err := os.ReadFile("../../deploy/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "Namespace":
			var n corev1.Namespace
			mustYAML(t, doc, &n)
			if _, err := client.CoreV1().Namespaces().Create(bg, &n, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		case "DaemonSet":
			var ds appsv1.DaemonSet
			mustYAML(t, doc, &ds)
			if _, err := client.AppsV1().DaemonSets(ds.Namespace).Create(bg, &ds, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Fatalf("apiserver rejects the DaemonSet: %v", err)
			}
			found = true
		}
	}
	if !found {
		t.Fatal("no DaemonSet in deploy/daemonset.yaml")
	}
}
