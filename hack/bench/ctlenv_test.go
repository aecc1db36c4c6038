package main

import (
	"slices"
	"testing"
)

// The controller under test never sees the bench's own configuration
// variables (a shell set up for a Data Plane API would switch it to
// single-Service mode), only what the bench passes.
func TestControllerEnv(t *testing.T) {
	t.Setenv("HAPROXY_DATAPLANE_URL", "http://127.0.0.1:5555")
	t.Setenv("HAPROXY_K8S_SYNC_DRIVER", "dataplane")
	t.Setenv("INGRESS_SERVICE_NAME", "web")
	t.Setenv("HKS_DATAPLANE_URL", "http://127.0.0.1:5555")
	env := controllerEnv([]string{"GOMEMLIMIT=100MiB"})
	for _, kv := range env {
		if controllerConfigEnv(kv) {
			t.Errorf("the controller gets %s", kv)
		}
	}
	if !slices.Contains(env, "GOMEMLIMIT=100MiB") || !slices.Contains(env, "HKS_DATAPLANE_URL=http://127.0.0.1:5555") {
		t.Errorf("extra or unrelated variables lost: %v", env)
	}
}
