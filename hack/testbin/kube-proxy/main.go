// Command kube-proxy is the upstream kube-proxy, built from the same Go
// module version as kube-apiserver, for the real-node tier of the tests
// (internal/testing/nodes), where it runs in nftables mode.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-proxy/app"
)

func main() {
	os.Exit(cli.Run(app.NewProxyCommand()))
}
