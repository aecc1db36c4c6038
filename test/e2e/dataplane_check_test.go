package e2e

import (
	"fmt"
	"testing"

	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/dataplane/dataplanetest"
	"github.com/haproxy-k8s-sync/haproxy-k8s-sync/internal/testing/kubeapi"
)

// The older controller's environment plus HAPROXY_K8S_SYNC_NODE_CHECK: in
// single-Service mode, where servers follow no node, a node check given
// is carried by each server of the operator's backend (option httpchk
// GET /healthz, expect 200, default-server port 10256 with the node
// check's interval), through the whole wiring: the variable, the
// composition's shape, the desired state and the driver. Without it the
// older controller's tcp-check stays (TestDataplaneSeedEnvironment).
func TestDataplaneSeedNodeCheckGiven(t *testing.T) {
	kube := kubeapi.Start(t)
	client := kube.Client(t)
	api := dataplanetest.Start(t, dataplanetest.Options{Users: map[string]string{"admin": seedPassword}})
	api.Load([]dataplanetest.Section{{
		Object: dataplane.Object{"name": seedBackend, "mode": "tcp", "balance": map[string]any{"algorithm": "roundrobin"}, "adv_check": "tcp-check",
			"default_server": map[string]any{"check": "enabled", "inter": 5000, "rise": 2, "fall": 2, "maxconn": 100}},
	}}, nil)
	env := seedEnv(kube, seedWorld(t, client, "127.81.28", "dc1", "dc2"), api.URL)
	env["HAPROXY_K8S_SYNC_NODE_CHECK"] = "http:10256/healthz"
	env["HAPROXY_K8S_SYNC_NODE_CHECK_INTERVAL"] = "3s"
	env["HAPROXY_K8S_SYNC_METRICS_ADDRESS"] = fmt.Sprintf("127.81.28.200:%d", freeLoopbackPort(t, "127.81.28.200"))
	env["HAPROXY_K8S_SYNC_DEFAULT_CHECK_INTERVAL"] = "4s" // the node check's interval wins for a carried check
	log := runSeedController(t, env)
	waitFor(t, log, "every node serves", func() error {
		return servingIs(api, seedBackend, set3("127.81.28.1:30443", "127.81.28.2:30443"))
	})
	sec, _ := api.Backend(seedBackend)
	ds, _ := sec.Object["default_server"].(map[string]any)
	wantDS := map[string]string{"check": "enabled", "inter": "3000", "rise": "2", "fall": "2", "health_check_port": "10256",
		"send-proxy-v2": "enabled", "maxconn": "100"}
	for k, v := range wantDS {
		if fmt.Sprint(ds[k]) != v {
			t.Errorf("default_server %s = %v, want %s (%v)", k, ds[k], v, ds)
		}
	}
	if ds["check-send-proxy"] != nil {
		t.Errorf("check-send-proxy on a check of the node's port: %v", ds)
	}
	if p, _ := sec.Object["httpchk_params"].(map[string]any); sec.Object["adv_check"] != "httpchk" || p["uri"] != "/healthz" || p["method"] != "GET" {
		t.Errorf("adv_check %v httpchk_params %v, want option httpchk GET /healthz", sec.Object["adv_check"], sec.Object["httpchk_params"])
	}
	if rules, _ := sec.Object["http_check_list"].([]any); len(rules) != 1 || fmt.Sprint(rules[0]) != "map[match:status pattern:200 type:expect]" {
		t.Errorf("http_check_list %v, want expect status 200", sec.Object["http_check_list"])
	}
}
