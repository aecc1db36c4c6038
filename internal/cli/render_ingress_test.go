package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/golden"
)

// TestRenderIngress: render reads Ingresses (their class taken as ours
// when no IngressClass is given) into the HTTP frontend and its map
// files, and reports on stderr each annotation it does not honour
// (proxy-buffering) or refuses (server-snippet: that Ingress is not
// rendered).
func TestRenderIngress(t *testing.T) {
	cfg, maps, stderr := renderToDir(t, "testdata/ingress.yaml")
	golden.Assert(t, "ingress.cfg", cfg)
	golden.Assert(t, "ingress-maps.txt", maps)
	for _, want := range []string{
		"warning: Ingress shop/shop: UnsupportedAnnotation: annotation nginx.ingress.kubernetes.io/proxy-buffering is not supported",
		"warning: Ingress shop/snippet: Refused: annotation nginx.ingress.kubernetes.io/server-snippet: refused",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if bytes.Contains(maps, []byte("evil")) {
		t.Errorf("the refused Ingress's host is in the maps:\n%s", maps)
	}
}

// renderToDir renders file with -o into a directory of the test's
// (and the flags extra), checks that HAProxy accepts the config, and
// returns it (the directory and the structure hash written as /DIR and
// HASH), the map files (renderedMaps) and stderr.
func renderToDir(t *testing.T, file string, extra ...string) (cfg, maps []byte, stderr *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	var stdout bytes.Buffer
	stderr = &bytes.Buffer{}
	args := []string{"-f", file, "--stats-socket", "/run/hks/admin.sock", "--state-file", "/var/lib/hks/state", "-o", dir}
	if err := renderCmd(append(args, extra...), env(nil), nil, &stdout, stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	cfg, err := os.ReadFile(filepath.Join(dir, renderConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	golden.HAProxyAccepts(t, cfg)
	// The directory is the test's, and the structure hash names it.
	cfg = regexp.MustCompile(`hks:[0-9a-f]+`).ReplaceAll(bytes.ReplaceAll(cfg, []byte(dir), []byte("/DIR")), []byte("hks:HASH"))
	return cfg, renderedMaps(t, dir), stderr
}

// renderedMaps are the map files render wrote into dir/acl, each after a
// line naming it.
func renderedMaps(t *testing.T, dir string) []byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "acl", "*.map"))
	slices.Sort(files)
	var maps bytes.Buffer
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		maps.WriteString("# " + filepath.Base(f) + "\n")
		maps.Write(b)
	}
	return maps.Bytes()
}

// TestRenderIngressCustomHeaders: render reads the ConfigMap an
// Ingress's custom-headers names from its input, so the headers are in
// the map files it writes (values with spaces and ';' as they are).
func TestRenderIngressCustomHeaders(t *testing.T) {
	cfg, maps, stderr := renderToDir(t, "testdata/ingress-headers.yaml")
	if strings.Contains(stderr.String(), "warning") {
		t.Errorf("warnings:\n%s", stderr.String())
	}
	for _, want := range []string{".rs.strict-transport-security max-age=31536000; includeSubDomains\n", ".rs.x-frame-options DENY\n"} {
		if !bytes.Contains(maps, []byte(want)) {
			t.Errorf("the maps lack %q:\n%s", want, maps)
		}
	}
	if !bytes.Contains(cfg, []byte("http-response set-header strict-transport-security")) {
		t.Errorf("no rule sets the header:\n%s", cfg)
	}
}

// TestRenderIngressGlobalHeaders: render's --ingress-proxy-set-headers
// and --ingress-add-headers name ConfigMaps of its input, as run's do:
// their headers are in the map files (an Ingress's own custom-headers of
// a name win); a ConfigMap not in the input is a warning; a flag that is
// not NAMESPACE/NAME is refused.
func TestRenderIngressGlobalHeaders(t *testing.T) {
	cfg, maps, stderr := renderToDir(t, "testdata/ingress-global.yaml", "--ingress-proxy-set-headers=shop/set", "--ingress-add-headers=shop/add")
	if strings.Contains(stderr.String(), "warning") {
		t.Errorf("warnings:\n%s", stderr.String())
	}
	golden.Assert(t, "ingress-global.cfg", cfg)
	golden.Assert(t, "ingress-global-maps.txt", maps)

	_, _, stderr = renderToDir(t, "testdata/ingress-global.yaml", "--ingress-add-headers=shop/gone")
	if want := "warning: ConfigMap shop/gone: InvalidGlobalHeaders: add-headers: ConfigMap shop/gone is missing"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}
	var out, errOut bytes.Buffer
	err := renderCmd([]string{"-f", "testdata/ingress-global.yaml", "-o", t.TempDir(), "--ingress-proxy-set-headers=set"}, env(nil), nil, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "want NAMESPACE/NAME") {
		t.Errorf("--ingress-proxy-set-headers=set: %v, want NAMESPACE/NAME refused", err)
	}
}
