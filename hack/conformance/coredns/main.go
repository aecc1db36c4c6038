// Command coredns is CoreDNS (github.com/coredns/coredns, the version in
// this module's go.mod) with only the plugins the Gateway API conformance
// suite's coredns manifest configures (forward, log, errors, whoami), for
// the real-node tier's image registry.k8s.io/coredns/coredns (hack/testbin.sh
// packs it; nothing is pulled). CoreDNS's own main with every plugin
// would pull in every cloud provider's SDK for four plugins.
package main

import (
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/whoami"

	"github.com/coredns/coredns/coremain"
)

func main() { coremain.Run() }
