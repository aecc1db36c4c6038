package apiserverlb

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadState reads a fuzzed kept apiserver list (the state file the
// apiserver mode starts from): it must not panic, and what it accepts
// must be a list of valid servers within the limit, without zones.
func FuzzLoadState(f *testing.F) {
	for _, s := range []string{
		`{"source":"endpointslice","servers":["192.0.2.1:6443","[2001:db8::1]:6443"],"applied":"2026-11-24T10:00:00Z"}`,
		`{"source":"static","servers":["192.0.2.1:0"]}`, `{"servers":["fe80::1%eth0:6443"]}`, `{"servers":null}`,
		`{"servers":["0.0.0.0:6443"]}`, `{`, ``, `[]`, `{"servers":["192.0.2.1:6443\nbackend x"]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "state.json")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := LoadState(path)
		if err != nil {
			return
		}
		if len(c.Servers) > maxServers {
			t.Fatalf("%d servers accepted", len(c.Servers))
		}
		for _, s := range c.Servers {
			if !s.IsValid() || s.Addr().Zone() != "" || s.Addr().IsUnspecified() || s.Port() == 0 {
				t.Fatalf("invalid server %v accepted from %q", s, b)
			}
		}
	})
}
