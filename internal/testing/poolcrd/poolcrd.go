// Package poolcrd installs the shipped AddressPool CRD
// (deploy/crds/addresspools.yaml) into a test apiserver and creates
// AddressPools there, for the tests and the benchmark that hand out
// addresses from pools.
package poolcrd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/pools"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// servedWithin bounds the wait for a new CRD to be served (about a
// second on a loopback apiserver).
const servedWithin = 30 * time.Second

// File is the shipped CRD's file below the repository root root.
func File(root string) string { return filepath.Join(root, "deploy", "crds", "addresspools.yaml") }

// Install creates the CRD read from file (File) and waits until the
// apiserver serves AddressPools.
func Install(ctx context.Context, dyn dynamic.Interface, file string) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var obj map[string]any
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if _, err := dyn.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the AddressPool CRD: %w", err)
	}
	var listErr error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, servedWithin, true, func(ctx context.Context) (bool, error) {
		_, listErr = dyn.Resource(pools.GVR).List(ctx, metav1.ListOptions{})
		return listErr == nil, nil
	})
	if err != nil {
		return fmt.Errorf("AddressPools not served within %v: %w (last: %v)", servedWithin, err, listErr)
	}
	return nil
}

// Create creates AddressPool name with spec.
func Create(ctx context.Context, dyn dynamic.Interface, name string, spec map[string]any) error {
	_, err := dyn.Resource(pools.GVR).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": pools.GVR.GroupVersion().String(), "kind": pools.Kind,
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}, metav1.CreateOptions{})
	return err
}
