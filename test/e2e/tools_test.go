package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
)

// toolsEnv names the directory of the helm and kustomize binaries
// (hack/tools.sh prints it; the Makefile exports it).
const toolsEnv = "HKS_TOOLS_DIR"

var (
	toolsOnce sync.Once
	toolsDir  string
	toolsErr  error
)

// tool returns the path of helm or kustomize, building them with
// hack/tools.sh on a machine's first use when HKS_TOOLS_DIR is not set.
func tool(t *testing.T, name string) string {
	t.Helper()
	toolsOnce.Do(func() {
		if toolsDir = os.Getenv(toolsEnv); toolsDir != "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "../../hack/tools.sh")
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			toolsErr = fmt.Errorf("hack/tools.sh: %w", err)
			return
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		toolsDir = lines[len(lines)-1]
	})
	if toolsErr != nil {
		t.Fatal(toolsErr)
	}
	return filepath.Join(toolsDir, name)
}

// run runs a tool and returns its stdout; stderr goes into the error.
func run(t *testing.T, bin string, args ...string) ([]byte, error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	// helm keeps caches and config under $HOME: keep them in the test's dir.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CACHE_HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_DATA_HOME="+home)
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), strings.Join(args, " "), err, errb.String())
	}
	return out.Bytes(), nil
}

// objects splits a multi-document YAML stream into objects (empty
// documents skipped).
func objects(t *testing.T, stream []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(stream), "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("rendered YAML does not parse: %v\n%s", err, doc)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

// dryRun creates the namespaces the objects live in, then sends every
// object to the apiserver as a server-side dry run, which validates it
// fully (schema, defaults, admission). Kinds the apiserver does not serve
// (a ServiceMonitor without the Prometheus operator's CRD) are returned.
func dryRun(t *testing.T, kube *kubeapi.Server, objs []*unstructured.Unstructured) (skipped []string) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	client := kube.Client(t)
	for _, o := range objs {
		if ns := o.GetNamespace(); ns != "" {
			_, _ = client.CoreV1().Namespaces().Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		}
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			skipped = append(skipped, gvk.Kind)
			continue
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if o.GetNamespace() != "" {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		_, err = ri.Create(bg, o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if gvk.Kind == "Namespace" && apierrors.IsAlreadyExists(err) {
			continue // created above for the objects in it
		}
		if err != nil {
			t.Errorf("apiserver rejects %s %s/%s: %v", gvk.Kind, o.GetNamespace(), o.GetName(), err)
		}
	}
	return skipped
}
