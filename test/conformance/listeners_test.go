package conformance

import (
	"os"
	"strconv"
)

// The suite in the listener mode issue 29 wants as the default, as the
// e2e suite reads it (test/e2e/listenersmode_test.go):
//
//	HKS_E2E_LISTENERS=tproxy  the controller runs with --listeners=tproxy
//	                          (its TPROXY table and policy routing in the
//	                          load balancer's namespace, --listener-netns)
//	                          and a backend pool
//	HKS_E2E_BACKEND_POOL=N    --backend-pool=N (4 in tproxy mode when unset)
//	HKS_E2E_HTTP_LISTENER=0   with tproxy, --http-listener=false (init's and the
//	                          controller's); else, as run's default, the
//	                          Gateways' plain HTTP listeners behind the fixed
//	                          HTTP listener (docs/listeners.md)
//
// The Gateways' TLS listeners keep frontends of their own in either mode
// (render.Options.Listened); the TCP ones go behind the fixed listener,
// the plain HTTP ones behind the fixed HTTP listener unless
// HKS_E2E_HTTP_LISTENER=0; every backend is a spare.
const (
	envListeners   = "HKS_E2E_LISTENERS"
	envBackendPool = "HKS_E2E_BACKEND_POOL"
	envHTTPListen  = "HKS_E2E_HTTP_LISTENER"
)

// httpListenerArgs is --http-listener=true in tproxy mode (run's
// default, said), false with HKS_E2E_HTTP_LISTENER=0.
func httpListenerArgs() []string {
	if os.Getenv(envListeners) == "tproxy" {
		return []string{"--http-listener=" + strconv.FormatBool(os.Getenv(envHTTPListen) != "0")}
	}
	return nil
}

// listenerArgs are the controller's flags of the mode (tproxy or ports),
// with the kernel's side in the network namespace at netns.
func listenerArgs(tproxy bool, netns string) []string {
	var args []string
	pool := os.Getenv(envBackendPool)
	if tproxy {
		args = append(args, "--listeners=tproxy", "--listener-netns", netns)
		args = append(args, httpListenerArgs()...)
		if pool == "" {
			pool = "4"
		}
	} else {
		args = append(args, "--listeners=ports") // not auto, the default
	}
	if pool != "" {
		args = append(args, "--backend-pool="+pool)
	}
	return args
}

// initListenerArgs are `init`'s flags of the mode (tproxy or ports):
// HAProxy's first config has the fixed listener in tproxy mode.
func initListenerArgs(tproxy bool) []string {
	if tproxy {
		return append([]string{"--listeners", "tproxy"}, httpListenerArgs()...)
	}
	return nil
}
