// Package golden compares rendered artifacts with files under testdata/.
// `go test -update` rewrites them; review the diff before committing.
package golden

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Assert fails t unless got equals testdata/name (rewritten first with -update).
func Assert(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from its golden file; run go test -update and review the diff.\ngot:\n%s", name, got)
	}
}

// HAProxyAccepts fails t unless the real `haproxy -c` accepts cfg (the
// binary tests use: haproxytest.Bin, $HAPROXY_BIN).
func HAProxyAccepts(t *testing.T, cfg []byte) {
	t.Helper()
	bin, err := exec.LookPath(haproxytest.Bin())
	if err != nil {
		t.Fatalf("haproxy not installed (make deps): %v", err)
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-q", "-f", path).CombinedOutput(); err != nil {
		t.Errorf("haproxy -c rejected the config: %v\n%s", err, out)
	}
}
