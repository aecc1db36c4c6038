// Command agnhost is Kubernetes' e2e test server (k8s.io/kubernetes/test/
// images/agnhost) with only the subcommands the real-node tier runs:
// netexec (HTTP and UDP servers answering with the Pod's hostname) and
// pause (the Pod sandbox). hack/image/testimage packages it as the images
// the test manifests name.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"k8s.io/kubernetes/test/images/agnhost/netexec"
	"k8s.io/kubernetes/test/images/agnhost/pause"
)

func main() {
	root := &cobra.Command{Use: "agnhost", Short: "netexec and pause from Kubernetes' agnhost"}
	root.AddCommand(netexec.CmdNetexec, pause.CmdPause)
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
