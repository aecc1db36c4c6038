package conformance

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/ingress"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/gwcrd"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/nodes"
)

// The ingress-controller-conformance suite
// (kubernetes-sigs/ingress-controller-conformance) cannot be a module of
// ours (the module proxy refuses it), so nothing of it is in the
// repository: TestIngressConformance runs a test binary of it built by
// hand elsewhere, when told where (docs/conformance/ingress.md says how):
//
//	HKS_INGRESS_CONFORMANCE         the suite's test binary (go test -c); it
//	                                runs in its directory, which holds features/
//	HKS_INGRESS_CONFORMANCE_IMAGES  image archives (absolute paths, comma-
//	                                separated) the nodes import: its echoserver
//	HKS_INGRESS_CONFORMANCE_ARGS    more flags for the suite (space-separated)
const (
	envIngressSuite  = "HKS_INGRESS_CONFORMANCE"
	envIngressImages = "HKS_INGRESS_CONFORMANCE_IMAGES"
	envIngressArgs   = "HKS_INGRESS_CONFORMANCE_ARGS"
)

// ingressClass is the class the suite's Ingresses name (its -ingress-class).
const ingressClass = "conformance"

// addHeaders is the ConfigMap of the response headers of every Ingress
// request (--ingress-add-headers).
const addHeaders = "conformance-add-headers"

// TestIngressConformance runs the suite's feature files against the
// gateway mode serving IngressClass conformance (--ingress-class), HAProxy
// in the tier's load-balancer namespace bound to its underlay address
// (what the Ingresses' status says), the echoserver Pods on two real
// nodes. Skipped unless HKS_INGRESS_CONFORMANCE is set.
func TestIngressConformance(t *testing.T) {
	suiteBin := os.Getenv(envIngressSuite)
	if suiteBin == "" {
		t.Skipf("%s unset: the suite is built by hand (docs/conformance/ingress.md)", envIngressSuite)
	}
	var images []string
	for _, p := range strings.Split(os.Getenv(envIngressImages), ",") {
		if p = strings.TrimSpace(p); p != "" {
			images = append(images, p)
		}
	}
	// The suite waits for v1 Endpoints: the endpoints controller beside
	// the tier's (a second --controllers adds to the first).
	tier := nodes.Start(t, nodes.Options{Images: images, ControllerManagerArgs: []string{"--controllers=endpoints-controller"}})
	if err := tier.LinkCaller(callerAddr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	tier.Bind(ctx, t)
	cfg, err := clientcmd.BuildConfigFromFlags("", tier.Kube.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	gwcrd.InstallAll(t, cfg)
	cs := tier.Client
	if _, err := cs.NetworkingV1().IngressClasses().Create(ctx, &netv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: ingressClass},
		Spec:       netv1.IngressClassSpec{Controller: ingress.ControllerName},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The one setting of the run: every response carries a Server header
	// (the default_backend feature wants one; the echoserver sends none
	// and HAProxy adds none), as ingress-nginx's add-headers would.
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: addHeaders},
		Data:       map[string]string{"Server": "haproxy-k8s-sync"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	serveIngress(ctx, t, tier, haproxyBins()[0])

	args := []string{"-test.v", "-test.timeout=50m", "-format=pretty", "-no-colors",
		"-ingress-class=" + ingressClass, "-wait-time-for-ingress-status=3m", "-wait-time-for-ready=4m"}
	args = append(args, strings.Fields(os.Getenv(envIngressArgs))...)
	cmd := exec.CommandContext(ctx, suiteBin, args...)
	cmd.Dir = filepath.Dir(suiteBin)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+tier.Kube.KubeconfigPath)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr // its scenarios as they run
	if err := cmd.Run(); err != nil {
		t.Errorf("the suite: %v", err)
	}
}

// serveIngress starts HAProxy bin in the tier's load-balancer namespace
// and the controller in-process in the gateway mode serving the Ingresses
// of class conformance on the load balancer's underlay address; both stop
// when t ends.
func serveIngress(ctx context.Context, t *testing.T, tier *nodes.Tier, bin string) {
	t.Helper()
	startController(ctx, t, tier, bin, nil, []string{
		"--mode=gateway",
		"--ingress-class=" + ingressClass,
		"--ingress-add-headers=default/" + addHeaders,
		"--bind-address", nodes.LBAddr,
	})
}
