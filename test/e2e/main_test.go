package e2e

import (
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/cli"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/shutdown"
)

// TestMain runs the controller, as cmd/haproxy-k8s-sync does, when a test
// starts this binary as it (controllerBinary, shutdown.Self): no test
// builds it. Its tests share one apiserver, reset between them
// (kubeapi.Shared).
func TestMain(m *testing.M) {
	shutdown.Main(kubeapi.Shared(m), map[string]func(){
		"controller": cli.Exit,
		// A line, then nothing until its stdin closes
		// (TestResidentSections).
		"idle": func() { fmt.Println("idle"); io.Copy(io.Discard, os.Stdin) },
	})
}
