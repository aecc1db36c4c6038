package e2e

import (
	"os"
	"slices"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
)

// Every kustomize base under deploy/ renders (kustomize build), matches its
// golden file, and every object is accepted by a real kube-apiserver (a
// server-side dry run validates it fully: containers, env from resource
// fields, volumes, probes). The Data Plane API mode's files also work the
// older controller's way: kubectl apply -f configmap.yaml -f rbac.yaml -f
// deployment.yaml.
func TestKustomizeBases(t *testing.T) {
	kustomize := tool(t, "kustomize")
	kube := kubeapi.Start(t)
	for _, tc := range []struct {
		name, dir string
		want      []string // kinds
	}{
		{"dataplane", "../../deploy", []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "Namespace", "ServiceAccount"}},
		{"services", "../../deploy/services", []string{"ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "DaemonSet", "Namespace", "Role", "RoleBinding", "ServiceAccount"}},
		{"gateway", "../../deploy/gateway", []string{"ClusterRole", "ClusterRoleBinding", "DaemonSet", "Namespace", "Role", "RoleBinding", "ServiceAccount"}},
		{"apiserver", "../../deploy/apiserver", []string{"ClusterRole", "ClusterRoleBinding", "DaemonSet", "Role", "Role", "RoleBinding", "RoleBinding", "Secret", "ServiceAccount"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, kustomize, "build", tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, "kustomize-"+tc.name+".yaml", out)
			objs := objects(t, out)
			if got := kinds(objs); !slices.Equal(got, tc.want) {
				t.Errorf("kinds %v, want %v", got, tc.want)
			}
			if skipped := dryRun(t, kube, objs); len(skipped) > 0 {
				t.Errorf("kinds the apiserver does not know: %v", skipped)
			}
		})
	}
	t.Run("seed-files", func(t *testing.T) {
		var all []byte
		for _, f := range []string{"configmap.yaml", "rbac.yaml", "deployment.yaml"} {
			b, err := os.ReadFile("../../deploy/" + f)
			if err != nil {
				t.Fatal(err)
			}
			all = append(append(all, b...), "\n---\n"...)
		}
		objs := objects(t, all)
		find(t, objs, "Deployment", "haproxy-k8s-sync")
		if skipped := dryRun(t, kube, objs); len(skipped) > 0 {
			t.Errorf("kinds the apiserver does not know: %v", skipped)
		}
	})
}
