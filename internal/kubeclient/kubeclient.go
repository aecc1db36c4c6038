// Package kubeclient builds the Kubernetes client configuration from the
// ways this controller can run: in-cluster, with a kubeconfig, or on a plain
// Linux host with an API URL and a token file.
package kubeclient

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Options select the credentials.
type Options struct {
	Kubeconfig string // path to a kubeconfig
	APIServer  string // https URL of the kube-apiserver (with TokenFile, or overriding the kubeconfig's)
	TokenFile  string // bearer token file, re-read by client-go when it changes
	CAFile     string // CA bundle that signs the apiserver's serving certificate
}

// ErrNoCredentials means no way to reach the API was given or found.
var ErrNoCredentials = errors.New("no Kubernetes credentials: use --kubeconfig, --api-server with --token-file, or run in a cluster")

// Config returns a rest.Config. Precedence: token file (with API URL) >
// kubeconfig > in-cluster > $KUBECONFIG / ~/.kube/config.
func Config(o Options) (*rest.Config, error) {
	var cfg *rest.Config
	switch {
	case o.TokenFile != "":
		if o.APIServer == "" {
			return nil, errors.New("--token-file needs --api-server")
		}
		if _, err := os.Stat(o.TokenFile); err != nil {
			return nil, fmt.Errorf("token file: %w", err)
		}
		cfg = &rest.Config{Host: o.APIServer, BearerTokenFile: o.TokenFile}
		cfg.TLSClientConfig.CAFile = o.CAFile
	case o.Kubeconfig != "":
		c, err := clientcmd.BuildConfigFromFlags(o.APIServer, o.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", o.Kubeconfig, err)
		}
		cfg = c
	default:
		c, err := rest.InClusterConfig()
		if err != nil {
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			c, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil {
				return nil, ErrNoCredentials
			}
		}
		cfg = c
	}
	cfg.UserAgent = "haproxy-k8s-sync"
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	return cfg, nil
}
