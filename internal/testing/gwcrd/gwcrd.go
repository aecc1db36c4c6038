// Package gwcrd installs the Gateway API CRDs into a test apiserver, from
// the sigs.k8s.io/gateway-api module this project builds with (its
// config/crd files in the module cache): the repository carries no CRD
// YAML of its own.
package gwcrd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// Standard are the CRDs of the standard channel this project reads.
var Standard = []string{"gatewayclasses", "gateways", "tcproutes", "tlsroutes", "udproutes", "referencegrants"}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Dir is the module's config/crd/standard directory.
func Dir() (string, error) { return channelDir("standard") }

// channelDir is the module's config/crd/<channel> directory.
func channelDir(channel string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m sigs.k8s.io/gateway-api: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "crd", channel), nil
}

// All are every CRD of the standard channel (HTTPRoute, GRPCRoute,
// BackendTLSPolicy and ListenerSet too): the upstream conformance suite
// applies manifests of all of them.
var All = []string{"backendtlspolicies", "gatewayclasses", "gateways", "grpcroutes", "httproutes", "listenersets",
	"referencegrants", "tcproutes", "tlsroutes", "udproutes"}

// Install creates the standard CRDs and waits until they are served.
func Install(t testing.TB, cfg *rest.Config) { InstallAlpha(t, cfg) }

// InstallAll creates every CRD of the standard channel (All) and waits
// until they are served.
func InstallAll(t testing.TB, cfg *rest.Config) { install(t, cfg, "standard", All, nil) }

// InstallAllExperimental is InstallAll from the experimental channel:
// the same resources with the experimental fields (an HTTPRoute rule's
// retry, for one) that the standard channel's schemas prune.
func InstallAllExperimental(t testing.TB, cfg *rest.Config) {
	install(t, cfg, "experimental", All, nil)
}

// InstallAlpha is Install, but the route CRDs named in alpha (e.g.
// "tcproutes") serve and store v1alpha2 only, as in a cluster with an
// older bundle.
func InstallAlpha(t testing.TB, cfg *rest.Config, alpha ...string) {
	t.Helper()
	install(t, cfg, "standard", Standard, alpha)
}

func install(t testing.TB, cfg *rest.Config, channel string, resources, alpha []string) {
	t.Helper()
	dir, err := channelDir(channel)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	served := map[string]string{}
	for _, r := range resources {
		raw, err := os.ReadFile(filepath.Join(dir, "gateway.networking.k8s.io_"+r+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		if slices.Contains(alpha, r) {
			versions, _, _ := unstructured.NestedSlice(obj, "spec", "versions")
			for _, v := range versions {
				m := v.(map[string]any)
				m["served"], m["storage"] = m["name"] == "v1alpha2", m["name"] == "v1alpha2"
			}
			if err := unstructured.SetNestedSlice(obj, versions, "spec", "versions"); err != nil {
				t.Fatal(err)
			}
		}
		versions, _, _ := unstructured.NestedSlice(obj, "spec", "versions")
		for _, v := range versions {
			if m := v.(map[string]any); m["served"] == true && served[r] == "" {
				served[r], _ = m["name"].(string)
			}
		}
		u := &unstructured.Unstructured{Object: obj}
		if _, err := dc.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create CRD %s: %v", r, err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, r := range resources {
		gvr := schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: served[r], Resource: r}
		for {
			_, err := dc.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("CRD %s not served: %v", r, err)
			}
			time.Sleep(50 * time.Millisecond) // poll interval
		}
	}
}
