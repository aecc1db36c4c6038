package controller

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/settings"
)

// FuzzLastGood reads a fuzzed last-good settings file (written by the
// controller, read back at start): it must not panic, and every entry it
// keeps must pass settings.Validate, so that nothing the annotation
// grammar refuses reaches haproxy.cfg from a damaged or edited file.
func FuzzLastGood(f *testing.F) {
	for _, s := range []string{
		`{"default/web":{"Balance":"roundrobin","Check":0,"CheckInterval":2000000000,"Rise":2,"Fall":3,"TimeoutConnect":5000000000,"TimeoutClient":50000000000,"TimeoutServer":50000000000}}`,
		`{"default/web":{"Balance":"roundrobin\n  server x 192.0.2.1:80","Rise":2,"Fall":3}}`,
		`{"a/b":{"SourceRanges":"192.0.2.0/24,::/0","Affinity":3600000000000}}`,
		`{"a/b":{"Rise":-1}}`, `{"a/b":null}`, `{`, `null`, `{"":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "last-good-settings.json")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		m, _ := lastGoodStore{path}.load()
		for k, s := range m {
			if s == nil {
				t.Fatalf("kept %s without settings", k)
			}
			if err := settings.Validate(*s); err != nil {
				t.Fatalf("kept %s: %v", k, err)
			}
		}
	})
}
