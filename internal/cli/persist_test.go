package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The persistence flags read their environment variables like every flag:
// a bad value is reported under the variable's name before anything runs.
func TestPersistFlagsFromEnv(t *testing.T) {
	for _, name := range []string{"HAPROXY_K8S_SYNC_PERSIST_INTERVAL", "HAPROXY_K8S_SYNC_PERSIST_MAX_DELAY"} {
		err := Run(context.Background(), nil, env(map[string]string{name: "soon"}), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "environment variable "+name) {
			t.Errorf("%s=soon: %v", name, err)
		}
	}
}

// run creates the directory of its state file; when it cannot, it fails
// at start saying the way out (not a warning on every save).
func TestEnsureStateDir(t *testing.T) {
	dir := t.TempDir()
	if err := ensureDir(filepath.Join(dir, "a", "b", "server-state"), "--state-file"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "a", "b")); err != nil || !fi.IsDir() {
		t.Errorf("directory not created: %v", err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := ensureDir(filepath.Join(file, "server-state"), "--state-file")
	if err == nil || !strings.Contains(err.Error(), "give --state-file a path in a writable directory") {
		t.Errorf("got %v", err)
	}
}
