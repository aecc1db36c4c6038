package kubeapi

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Controllers are the kube-controller-manager controllers Options.Controllers
// runs: enough for Deployments to make Pods and for the endpoint-slice
// controller to write their EndpointSlices; and the namespace controller,
// so that a Namespace deleted (the conformance suite's ListenerSet tests
// delete those their manifests create) is emptied and goes, as on a
// cluster, rather than staying Terminating for good.
var Controllers = []string{
	"endpointslice-controller",
	"serviceaccount-controller",
	"deployment-controller",
	"replicaset-controller",
	"garbage-collector-controller",
	"namespace-controller",
}

// KwokStages is the stage configuration kwok runs with (kwok-stages.yaml):
// Nodes become Ready unless annotated kwok.x-k8s.io/status=custom, Pods
// bound to a node become Running and Ready with an IP from PodCIDR, and
// Pods being deleted are deleted at once (a finalizer keeps one
// terminating).
//
//go:embed kwok-stages.yaml
var KwokStages []byte

// PodCIDR is where kwok takes Pod IPs from. Pods are fake: nothing answers
// on these addresses.
const PodCIDR = "10.244.0.0/16"

// KwokCustomAnnotation on a Node, with value "custom", makes kwok leave its
// status to the test (kwok makes every other Node Ready).
const KwokCustomAnnotation = "kwok.x-k8s.io/status"

const controllersReadyTimeout = 120 * time.Second

// startControllers runs kube-controller-manager and kwok against the
// apiserver and waits until the controller-manager works (the default
// ServiceAccount exists). kwok has no readiness signal: tests wait for
// what they need (a Pod Ready, an EndpointSlice).
func (s *Server) startControllers(bins string, extra []string, kwok bool) error {
	need := []string{"kube-controller-manager"}
	if kwok {
		need = append(need, "kwok")
	}
	for _, b := range need {
		if _, err := os.Stat(filepath.Join(bins, b)); err != nil {
			return fmt.Errorf("%s missing in %s (hack/testbin.sh builds it): %w", b, bins, err)
		}
	}
	args := []string{
		"--kubeconfig=" + s.KubeconfigPath,
		"--controllers=" + strings.Join(Controllers, ","),
		"--leader-elect=false",
		// No serving: several test clusters run on one machine.
		"--secure-port=0",
		"--v=1",
	}
	p, err := startProcess("kube-controller-manager", filepath.Join(bins, "kube-controller-manager"),
		filepath.Join(s.Dir, "kube-controller-manager.log"), append(args, extra...)...)
	if err != nil {
		return fmt.Errorf("kube-controller-manager: %w", err)
	}
	s.controllerManager = p
	if !kwok {
		return s.waitControllerManager()
	}

	stages := filepath.Join(s.Dir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, KwokStages, 0o600); err != nil {
		return err
	}
	p, err = startProcess("kwok", filepath.Join(bins, "kwok"), filepath.Join(s.Dir, "kwok.log"),
		"--kubeconfig="+s.KubeconfigPath,
		"--config="+stages,
		"--manage-all-nodes=true",
		"--cidr="+PodCIDR,
	)
	if err != nil {
		return fmt.Errorf("kwok: %w", err)
	}
	s.kwok = p
	if err := s.waitControllerManager(); err != nil {
		return err
	}
	select {
	case <-s.kwok.Done():
		return fmt.Errorf("kwok exited: %v\n--- last lines of its log ---\n%s", s.kwok.Err(), s.kwok.Tail(30))
	default:
	}
	return nil
}

// waitControllerManager waits until the controller-manager works: the
// default ServiceAccount exists.
func (s *Server) waitControllerManager() error {
	c, err := kubernetes.NewForConfig(rest.CopyConfig(s.Config))
	if err != nil {
		return err
	}
	err = waitUntil(s.controllerManager, controllersReadyTimeout, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := c.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	if err != nil {
		return fmt.Errorf("kube-controller-manager: %w\n--- last lines of its log ---\n%s", err, s.controllerManager.Tail(30))
	}
	return nil
}
