// Command kube-controller-manager is the upstream kube-controller-manager,
// built from the Go module proxy so that tests see the EndpointSlices the real
// endpoint-slice controller writes.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
