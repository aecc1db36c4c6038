package cli

import (
	"net"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/privnet"
)

// The package's tests run `run`, whose --listeners=auto probe sets the
// TPROXY table and policy route up where it runs: never on the host.
func TestMain(m *testing.M) { privnet.Main(m) }

// TestInNamespaceOfItsOwn: the tests above run with only a loopback of
// their own (by hand, `go test ./internal/cli` on a host, this failed
// before TestMain, and a TPROXY table and ip rule were left behind).
func TestInNamespaceOfItsOwn(t *testing.T) {
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	privnet.Check(t, names)
}
