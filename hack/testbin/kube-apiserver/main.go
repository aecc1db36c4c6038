// Command kube-apiserver is the upstream kube-apiserver, built from the Go
// module proxy so that tests run against the real thing.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
