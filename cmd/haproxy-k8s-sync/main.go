// Command haproxy-k8s-sync makes HAProxy the Kubernetes-aware load balancer
// of a cluster. All logic lives in internal/; see docs/architecture.md.
package main

import (
	"os"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args, os.Stdin, os.Stdout, os.Stderr))
}
