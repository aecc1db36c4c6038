package e2e

import (
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/shutdown"
)

// TestMain runs the controller, as cmd/haproxy-k8s-sync does, when a test
// starts this binary as it (controllerBinary, shutdown.Self): no test
// builds it.
func TestMain(m *testing.M) {
	shutdown.Main(m, map[string]func(){
		"controller": cli.Exit,
	})
}
