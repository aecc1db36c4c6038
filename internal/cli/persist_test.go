package cli

import (
	"bytes"
	"context"
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
