// Command haproxy-k8s-sync makes HAProxy the Kubernetes-aware load balancer
// of a cluster. All logic lives in internal/; see docs/architecture.md.
package main

import "github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"

func main() { cli.Exit() }
