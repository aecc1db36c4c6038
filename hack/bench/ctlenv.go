package main

import (
	"os"
	"strings"
)

// controllerConfigEnv reports whether an environment variable configures
// the controller: its own HAPROXY_K8S_SYNC_*, and those of the older Data
// Plane API controller it honours, which select another mode (a shell set
// up to reach a Data Plane API, say, would turn the bench's controller
// into single-Service mode).
func controllerConfigEnv(kv string) bool {
	name, _, _ := strings.Cut(kv, "=")
	switch name {
	case "INGRESS_NAMESPACE", "INGRESS_SERVICE_NAME", "RESYNC_PERIOD", "WORKER_COUNT":
		return true
	}
	for _, p := range []string{"HAPROXY_K8S_SYNC_", "HAPROXY_DATAPLANE_", "HAPROXY_BACKEND_", "HAPROXY_SEND_PROXY"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// controllerEnv is the environment of a controller under test: this
// process's without what would configure the controller, plus extra
// (KEY=VALUE). The bench configures it by flags only.
func controllerEnv(extra []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !controllerConfigEnv(kv) {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}
