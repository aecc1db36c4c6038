package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// render of Gateway API objects: an HTTP listener's frontend and the map
// files it reads (-o DIR), a route refused with a warning naming why.
func TestRenderGatewayHTTP(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := renderCmd([]string{"-f", "testdata/gateway-http.yaml", "--stats-socket", "/run/hks/admin.sock", "--state-file", "/var/lib/hks/state", "-o", dir},
		env(nil), nil, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	cfg, err := os.ReadFile(filepath.Join(dir, renderConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	golden.HAProxyAccepts(t, cfg)
	// The directory is the test's, and the structure hash names it.
	cfg = regexp.MustCompile(`hks:[0-9a-f]+`).ReplaceAll(bytes.ReplaceAll(cfg, []byte(dir), []byte("/DIR")), []byte("hks:HASH"))
	golden.Assert(t, "gateway-http.cfg", cfg)
	golden.Assert(t, "gateway-http-maps.txt", renderedMaps(t, dir))
	if want := `warning: HTTPRoute apps/bad parent gw: Accepted=False UnsupportedValue: rules[0].matches[0]: path "/a b" is not an absolute path`; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}

	// Without -o: the maps have nowhere to go.
	stderr.Reset()
	err = renderCmd([]string{"-f", "testdata/gateway-http.yaml"}, env(nil), nil, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "-o DIR") {
		t.Errorf("render without -o: %v, want an error naming -o DIR", err)
	}
}
