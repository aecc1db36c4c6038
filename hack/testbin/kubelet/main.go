// Command kubelet is the upstream kubelet, built from the same Go module
// version as kube-apiserver, for the real-node tier of the tests
// (internal/testing/nodes).
package main

import (
	"context"
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	os.Exit(cli.Run(app.NewKubeletCommand(context.Background())))
}
