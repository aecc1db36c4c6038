package haproxy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/haproxy/haproxytest"
)

// Explain gives what `haproxy -c` says against a file, with `quiet` in
// its global section too (which silences HAProxy's own output), and
// nothing for a file that only a start would refuse (a bind).
func TestExplain(t *testing.T) {
	dir := t.TempDir()
	ctx := testCtx(t)
	quiet := func(cfg string) string {
		return strings.Replace(cfg, "global\n", "global\n    quiet\n", 1)
	}
	bad := lbConfig(dir, 8080) + "    server s5 127.0.0.1:1 bogus-keyword\n"
	for _, c := range []struct {
		name, cfg, want string
	}{
		{"good", lbConfig(dir, 8080), ""},
		{"bad keyword", bad, "bogus-keyword"},
		{"bad keyword, quiet", quiet(bad), "bogus-keyword"},
		{"bind only a start tries", strings.Replace(lbConfig(dir, 8080), "127.0.0.1:8080", "192.0.2.1:8080", 1), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "bad keyword, quiet" && !strings.Contains(c.cfg, "quiet") {
				t.Fatal("the fixture has no quiet line")
			}
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".cfg")
			if err := os.WriteFile(path, []byte(c.cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := Explain(ctx, haproxytest.Bin(), path)
			switch {
			case err != nil:
				t.Fatal(err)
			case c.want == "" && got != "":
				t.Errorf("Explain = %q, want nothing", got)
			case c.want != "" && (!strings.Contains(got, c.want) || !strings.Contains(got, path)):
				t.Errorf("Explain = %q, want the file's line and %q", got, c.want)
			}
		})
	}
}
