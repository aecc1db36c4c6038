package conformance

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/apis/v1alpha2"
	"sigs.k8s.io/gateway-api/apis/v1alpha3"
	"sigs.k8s.io/gateway-api/apis/v1beta1"
	xv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"
	"sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance/utils/config"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	gwclient "sigs.k8s.io/gateway-api/pkg/client/clientset/versioned"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/gateway"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/gwcrd"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/nodes"
)

// gatewayClass is the GatewayClass the suite's manifests name.
const gatewayClass = "haproxy-k8s-sync"

// callerAddr is the test process's address on the tier's underlay.
const callerAddr = "198.18.0.4"

// gatewayPool is the AddressPool the Gateways get their addresses from
// (--address-pools): each Gateway its own, so that the suite's Gateways
// can share a port, as on a cluster. The load balancer's namespace takes
// the whole range as local (AnyIP), and the test process routes it there.
const gatewayPool = "198.18.64.0/26"

// usableAddr is an address of gatewayPool a Gateway may ask for.
const usableAddr = "198.18.64.60"

func ptr[T any](v T) *T { return &v }

// Environment:
//
//	HKS_CONFORMANCE_REPORT  file the suite's report is written to (make conformance)
//	HKS_CONFORMANCE_TESTS   comma-separated short names: only those run; unset or
//	                        "all": every test of the five profiles (make test and
//	                        make conformance alike: the whole run takes about a minute)
//	HKS_CONFORMANCE_PROFILES comma-separated profile names (GATEWAY-HTTP, ...): only
//	                        those; unset: the five
const (
	envReport   = "HKS_CONFORMANCE_REPORT"
	envTests    = "HKS_CONFORMANCE_TESTS"
	envProfiles = "HKS_CONFORMANCE_PROFILES"
)

// profiles are the suite's profiles run: the five, or those envProfiles
// names (as the suite spells them).
func profiles(getenv func(string) string) []suite.ConformanceProfileName {
	only := getenv(envProfiles)
	if only == "" {
		return []suite.ConformanceProfileName{
			suite.GatewayTCPConformanceProfileName,
			suite.GatewayUDPConformanceProfileName,
			suite.GatewayTLSConformanceProfileName,
			suite.GatewayHTTPConformanceProfileName,
			suite.GatewayGRPCConformanceProfileName,
		}
	}
	return profileNames(only)
}

// profileNames are the profiles of a comma-separated list.
func profileNames(list string) []suite.ConformanceProfileName {
	var out []suite.ConformanceProfileName
	for _, n := range strings.Split(list, ",") {
		out = append(out, suite.ConformanceProfileName(strings.TrimSpace(n))) // the suite refuses a name it does not know
	}
	return out
}

// TestConformance runs the suite's GATEWAY-TCP, GATEWAY-UDP,
// GATEWAY-TLS, GATEWAY-HTTP and GATEWAY-GRPC profiles, provisional tests included, against the
// controller in gateway mode driving a real HAProxy (TCP, TLS) and the
// kernel's nftables (UDP) in the tier's load-balancer namespace, with the
// backends of the suite's manifests as real Pods on two real nodes.
func TestConformance(t *testing.T) {
	begin := time.Now()
	// The failed tests named last (summary_test.go): the first cleanup
	// runs last, once the parallel tests (resumed when this function
	// returns) have ended and the tier's and controller's logs are out.
	failed := &failedTests{}
	t.Cleanup(func() {
		for _, l := range failed.lines() {
			t.Error(l)
		}
	})
	tier := nodes.Start(t, nodes.Options{Images: []string{"conformance-images.tar"}})
	if err := tier.LinkCaller(callerAddr, gatewayPool); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ip", "-n", tier.LB, "route", "add", "local", gatewayPool, "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("AnyIP route in the load balancer's namespace: %v: %s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	tier.Bind(ctx, t)

	cfg, err := clientcmd.BuildConfigFromFlags("", tier.Kube.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	gwcrd.InstallAllExperimental(t, cfg) // experimental: a rule's retry survives
	installPool(t, cfg)

	gc, err := gwclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gc.GatewayV1().GatewayClasses().Create(ctx, &gwv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: gatewayClass},
		Spec:       gwv1.GatewayClassSpec{ControllerName: gateway.ControllerName},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// One suite run per pass (an HAProxy binary, a listener mode: passes),
	// on the one tier: the second starts from what the first left (its
	// base resources kept), with every Gateway's status cleared so that
	// nothing reads as Programmed before the new controller has
	// programmed its HAProxy.
	all := passes(os.Getenv)
	for i, p := range all {
		last := i == len(all)-1
		t.Run(p.name(t), func(t *testing.T) {
			if i > 0 {
				clearGatewayStatus(ctx, t, gc)
				waitNamespacesGone(ctx, t, cfg) // namespaces_test.go
			}
			serve(ctx, t, tier, p)
			// The suite infers the supported features from the
			// GatewayClass's status: wait for it.
			if err := waitUntil(2*time.Minute, func() error {
				c, err := gc.GatewayV1().GatewayClasses().Get(ctx, gatewayClass, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if len(c.Status.SupportedFeatures) == 0 {
					return fmt.Errorf("GatewayClass %s has no supportedFeatures yet", gatewayClass)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			t.Logf("conformance: tier, CRDs, HAProxy and controller up %v after the start", time.Since(begin).Round(time.Second))
			opts := options(t, cfg)
			opts.ConformanceProfiles = p.profiles
			opts.CleanupBaseResources = last
			if i > 0 {
				opts.ReportOutputPath = "" // the report is the first binary's
			}
			runSuite(t, opts, failed)
		})
	}
	t.Logf("conformance: whole run %v", time.Since(begin).Round(time.Second))
}

// serve starts the pass's HAProxy in the tier's load-balancer namespace
// and the controller in-process in gateway mode driving it, in the pass's
// listener mode; both stop when t ends.
func serve(ctx context.Context, t *testing.T, tier *nodes.Tier, p pass) {
	t.Helper()
	// The controller, in-process, with HAProxy in the load balancer's
	// namespace and its UDP path in the same namespace's nftables.
	listen := listenerArgs(p.tproxy, nodes.NSPath(tier.LB))
	t.Logf("the controller's listener mode: %v", listen)
	startController(ctx, t, tier, p.bin, initListenerArgs(p.tproxy), append([]string{
		"--mode=gateway",
		"--address-pools",
		"--udp=nftables", "--udp-netns", nodes.NSPath(tier.LB), "--udp-ip-forward=enable", "--udp-health=none",
		"--log-level", "debug",
	}, listen...))
}

// startController starts HAProxy bin in the tier's load-balancer
// namespace (its first configuration written by init with initArgs) and
// the controller in-process with args and the flags that make it drive
// that HAProxy; both stop when t ends (the controller's log tail shown
// when t failed).
func startController(ctx context.Context, t *testing.T, tier *nodes.Tier, bin string, initArgs, args []string) {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	if code := cli.Main(append([]string{"haproxy-k8s-sync", "init", "--haproxy-config", cfgPath,
		"--stats-socket", haproxytest.StatsSocketPath(dir), "--state-file", filepath.Join(dir, "state")}, initArgs...),
		nil, os.Stdout, os.Stderr); code != 0 {
		t.Fatalf("init exited %d", code)
	}
	hap := haproxytest.StartWithInNetNS(t, bin, dir, cfgPath, nodes.NSPath(tier.LB))
	ctlCtx, ctlCancel := context.WithCancel(ctx)
	ctlDone := make(chan error, 1)
	ctlLog := &haproxytest.LockedBuffer{}
	go func() {
		ctlDone <- cli.Run(ctlCtx, append([]string{
			"--kubeconfig", tier.Kube.KubeconfigPath,
			"--haproxy-config", cfgPath,
			"--haproxy-bin", bin,
			"--master-socket", hap.MasterSocket,
			"--stats-socket", hap.StatsSocket,
			"--state-file", filepath.Join(dir, "state"),
			"--metrics-address", "",
		}, args...), func(string) string { return "" }, ctlLog)
	}()
	t.Cleanup(func() {
		ctlCancel()
		select {
		case err := <-ctlDone:
			if err != nil {
				t.Logf("controller: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("controller did not stop")
		}
		if t.Failed() {
			t.Logf("controller log (tail):\n%s", tail(ctlLog.String(), 200))
		}
	})
}

// options are the suite's options for our profiles: the supported
// features inferred from our GatewayClass's status (as the suite prefers),
// provisional tests included, the suite's own timeouts.
func options(t *testing.T, cfg *rest.Config) suite.ConformanceOptions {
	t.Helper()
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, install := range []func(*runtime.Scheme) error{v1alpha3.Install, v1alpha2.Install, v1beta1.Install,
		xv1alpha1.Install, gwv1.Install, apiextensionsv1.AddToScheme} {
		if err := install(cl.Scheme()); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var skip []string
	if only := os.Getenv(envTests); only != "" && only != "all" {
		keep := map[string]bool{}
		for _, n := range strings.Split(only, ",") {
			keep[strings.TrimSpace(n)] = true
		}
		for _, ct := range tests.ConformanceTests {
			if !keep[ct.ShortName] {
				skip = append(skip, ct.ShortName)
			}
		}
	}
	return suite.ConformanceOptions{
		ConfigurableOptions: suite.ConfigurableOptions{
			GatewayClassName:     gatewayClass,
			CleanupBaseResources: true,
			CleanupTestResources: true,
			TimeoutConfig:        config.DefaultTimeoutConfig(),
			SkipTests:            skip,
			SkipProvisionalTests: false,
			Mode:                 "default",
			ReportOutputPath:     os.Getenv(envReport),
			ConformanceProfiles:  profiles(os.Getenv), // the pass's (passes)
			// GatewayStaticAddresses: one address of the pool, one of no
			// pool (documentation range, never routed).
			UsableNetworkAddresses:   []gwv1.GatewaySpecAddress{{Type: ptr(gwv1.IPAddressType), Value: usableAddr}},
			UnusableNetworkAddresses: []gwv1.GatewaySpecAddress{{Type: ptr(gwv1.IPAddressType), Value: "203.0.113.9"}},
			Implementation: confv1.Implementation{
				Organization: "haproxy-k8s-sync",
				Project:      "haproxy-k8s-sync",
				URL:          "https://github.com/haproxy-k8s-sync/haproxy-k8s-sync",
				Version:      "main",
				Contact:      []string{"https://github.com/haproxy-k8s-sync/haproxy-k8s-sync/issues"},
			},
		},
		Client:     cl,
		Clientset:  cs,
		RestConfig: cfg,
		ManifestFS: []fs.FS{&conformance.Manifests},
	}
}

func runSuite(t *testing.T, opts suite.ConformanceOptions, failed *failedTests) {
	t.Helper()
	opts.Hook = failed.hook
	cs, err := suite.NewConformanceTestSuite(opts)
	if err != nil {
		t.Fatalf("conformance suite: %v", err)
	}
	if opts.ReportOutputPath != "" {
		t.Cleanup(func() {
			report, err := cs.Report()
			if err != nil {
				t.Errorf("conformance report: %v", err)
				return
			}
			raw, err := yaml.Marshal(report)
			if err != nil {
				t.Errorf("conformance report: %v", err)
				return
			}
			if err := os.MkdirAll(filepath.Dir(opts.ReportOutputPath), 0o755); err != nil {
				t.Errorf("conformance report: %v", err)
				return
			}
			if err := os.WriteFile(opts.ReportOutputPath, raw, 0o644); err != nil {
				t.Errorf("conformance report: %v", err)
				return
			}
			t.Logf("conformance report written to %s:\n%s", opts.ReportOutputPath, raw)
		})
	}
	cs.Setup(t, tests.ConformanceTests)
	if err := cs.Run(t, tests.ConformanceTests); err != nil {
		t.Error(err)
	}
}

func waitUntil(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v: %w", timeout, err)
		}
		time.Sleep(200 * time.Millisecond) // poll interval
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
